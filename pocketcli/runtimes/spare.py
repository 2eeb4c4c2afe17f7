"""A chunk's start buffers kept warm for the next chunk (``OnnxRuntime.start_sequence``).

A chunk starts in buffers of its own (the voice's positions copied in), and its first
frame moves its cache into a row of the scheduler's stack. Freed, those pages go back to
the system, and the next chunk's fresh pages cost a fault each: 1-3 ms for a full-size
chunk's 5-15 MB, all of it before that chunk's first audio. Kept, they are mapped already.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence

import numpy as np

# References to a spare array while ``take`` checks it: the spare list's own and
# ``getrefcount``'s argument. One more is someone still holding it (or a view of it).
_OURS = 2


class SpareBuffers:
    """At most one set of a sequence's per-layer keys and values (memory bounded by the
    model), handed out again only when nothing else holds any array of it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._spare: list[np.ndarray] = []
        self._layers = 0

    def give(self, keys: Sequence[np.ndarray], values: Sequence[np.ndarray]) -> None:
        """Keeps ``keys`` and ``values`` (the caller lets go of them) if they are buffers
        of their own, not views of another array."""
        arrays = [*keys, *values]
        if all(a.base is None and a.flags.writeable for a in arrays):
            with self._lock:
                self._spare, self._layers = arrays, len(keys)

    def take(
        self, shape_k: tuple[int, ...], shape_v: tuple[int, ...]
    ) -> tuple[list[np.ndarray], list[np.ndarray]] | None:
        """The spare keys and values if they have these shapes and are held by nobody
        else (their contents are the last chunk's); None otherwise (dropped)."""
        with self._lock:
            arrays, layers, self._spare = self._spare, self._layers, []
        if not arrays:
            return None
        for i in range(len(arrays)):  # no loop variable: it would hold a reference
            shape = shape_k if i < layers else shape_v
            if arrays[i].shape != shape or sys.getrefcount(arrays[i]) > _OURS:
                return None
        return arrays[:layers], arrays[layers:]
