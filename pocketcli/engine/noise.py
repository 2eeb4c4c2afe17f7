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


class Peekable:
    """A noise source whose next vector can be seen before it is taken: ``peek(size)``
    draws it (once); the next call returns that same vector."""

    _peeked: np.ndarray | None = None

    def _draw(self, size: int) -> np.ndarray:
        raise NotImplementedError

    def peek(self, size: int) -> np.ndarray:
        if self._peeked is None:
            self._peeked = self._draw(size)
        return self._peeked

    def __call__(self, size: int) -> np.ndarray:
        if self._peeked is not None:
            value, self._peeked = self._peeked, None
            return value
        return self._draw(size)


class Lookahead(Peekable):
    """Any noise source, made peekable."""

    def __init__(self, source: NoiseSource) -> None:
        self._source = source

    def _draw(self, size: int) -> np.ndarray:
        return self._source(size)


def peekable(noise: NoiseSource) -> Peekable:
    return noise if isinstance(noise, Peekable) else Lookahead(noise)


class GaussianNoise(Peekable):
    """N(0, temperature) from numpy's PCG64, as pocket-tts draws it (std = sqrt(temperature));
    temperature 0 gives exact zeros.

    ``clamp`` is pocket-tts's ``noise_clamp``: the normal truncated to
    ``[-clamp, clamp]`` (``torch.nn.init.trunc_normal_``: values outside are
    redrawn, not clipped, so the bounds carry no extra mass).
    """

    def __init__(
        self, temperature: float, seed: int | None = None, clamp: float | None = None
    ) -> None:
        if temperature < 0:
            raise ValueError("temperature must be >= 0")
        if clamp is not None and not clamp > 0:
            raise ValueError("noise clamp must be > 0")
        self.std = np.float32(np.sqrt(temperature))
        self.clamp = None if clamp is None else float(clamp)
        self.rng = np.random.default_rng(seed)

    def _draw(self, size: int) -> np.ndarray:
        if self.std == 0:
            return np.zeros(size, np.float32)
        if self.clamp is None:
            return self.rng.standard_normal(size, dtype=np.float32) * self.std
        return self._truncated(size)

    def _truncated(self, size: int) -> np.ndarray:
        """Exact truncated normal by rejection. Against a wide bound the proposal is the
        normal itself (accepts >= 68 % when clamp >= std); against a narrow one it is
        uniform on the bounds, accepted with the normal's relative density (>= 60 %)."""
        std, bound = float(self.std), self.clamp
        assert bound is not None
        out = np.empty(size, np.float64)
        todo = np.arange(size)
        while todo.size:
            if bound >= std:
                draw = self.rng.standard_normal(todo.size) * std
                keep = np.abs(draw) <= bound
            else:
                draw = self.rng.uniform(-bound, bound, todo.size)
                keep = self.rng.random(todo.size) < np.exp(-0.5 * (draw / std) ** 2)
            out[todo[keep]] = draw[keep]
            todo = todo[~keep]
        return out.astype(np.float32)


class InjectedNoise(Peekable):
    """Replays given noise vectors in order (one per generated frame)."""

    def __init__(self, frames: Iterable[np.ndarray]) -> None:
        self._frames: Iterator[np.ndarray] = iter(frames)

    def _draw(self, size: int) -> np.ndarray:
        try:
            frame = np.asarray(next(self._frames), np.float32).reshape(-1)
        except StopIteration:
            raise ValueError("injected noise ran out before generation ended") from None
        if frame.size != size:
            raise ValueError(f"injected noise has {frame.size} values, expected {size}")
        return frame
