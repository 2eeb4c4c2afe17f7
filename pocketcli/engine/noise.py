"""Where the flow head's starting noise comes from.

Noise is drawn on the host, so a seed means the same audio on every runtime
and OS, and a test can inject the exact noise another implementation drew.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Protocol

import numpy as np


class NoiseSource(Protocol):
    def __call__(self, size: int) -> np.ndarray:
        """One float32 vector of ``size`` values: the x0 of one frame."""
        ...


class GaussianNoise:
    """N(0, temperature) from numpy's PCG64; temperature 0 gives exact zeros."""

    def __init__(self, temperature: float, seed: int | None = None) -> None:
        if temperature < 0:
            raise ValueError("temperature must be >= 0")
        self.std = np.float32(np.sqrt(temperature))
        self.rng = np.random.default_rng(seed)

    def __call__(self, size: int) -> np.ndarray:
        if self.std == 0:
            return np.zeros(size, np.float32)
        return self.rng.standard_normal(size, dtype=np.float32) * self.std


class InjectedNoise:
    """Replays given noise vectors in order (one per generated frame)."""

    def __init__(self, frames: Iterable[np.ndarray]) -> None:
        self._frames: Iterator[np.ndarray] = iter(frames)

    def __call__(self, size: int) -> np.ndarray:
        try:
            frame = np.asarray(next(self._frames), np.float32).reshape(-1)
        except StopIteration:
            raise ValueError("injected noise ran out before generation ended") from None
        if frame.size != size:
            raise ValueError(f"injected noise has {frame.size} values, expected {size}")
        return frame
