"""Overlapping the Mimi decoder with the FlowLM.

ONNX Runtime releases the GIL while it runs, so decoding frame n on a worker
thread while the FlowLM computes frame n+1 uses both cores of a small machine.
Frames come back in order; the worker owns the decoder state exclusively.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np


class DecoderPipeline:
    def __init__(self, decode: Callable[[np.ndarray], np.ndarray], threaded: bool = True) -> None:
        self._decode = decode
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="mimi") if threaded else None
        self._pending: deque[Future[np.ndarray]] = deque()

    def submit(self, latent: np.ndarray) -> None:
        if self._pool is None:
            done: Future[np.ndarray] = Future()
            done.set_result(self._decode(latent))
            self._pending.append(done)
        else:
            self._pending.append(self._pool.submit(self._decode, latent))

    def ready(self, wait_for_first: bool = False) -> Iterator[np.ndarray]:
        """Frames already decoded (optionally blocking for the oldest one)."""
        if wait_for_first and self._pending:
            yield self._pending.popleft().result()
        while self._pending and self._pending[0].done():
            yield self._pending.popleft().result()

    def drain(self) -> Iterator[np.ndarray]:
        while self._pending:
            yield self._pending.popleft().result()

    def close(self) -> None:
        for future in self._pending:
            future.cancel()
        self._pending.clear()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
