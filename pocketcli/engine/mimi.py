"""A scheduler's Mimi work: decoding the latents of each tick, on its own threads.

ONNX Runtime releases the GIL while it runs, so decoding a tick's latents on
Mimi threads while the next tick's FlowLM runs uses both cores of a small machine.
Where the runtime's decodes may overlap (``runtimes.base.decode_lanes``), the
streams are spread over two lanes, each a thread of its own: a stream keeps its
lane for its whole life, so its frames are decoded and handed over in order,
while two streams' decodes run at once (at many streams, one thread's Mimi work
alone would fill a tick). In each lane a tick's latents go over as at most two
jobs: those of streams with nothing unread (a first frame, a reader waiting)
ahead of the work already queued, the rest behind it. Each job decodes in rounds
(a stream's second piece after its first), each round in calls of streams with
as many latents: one batched call where the runtime has one
(``runtimes.base.decode_batching``), up to the rows it says a call should take,
else one call per stream. A failed call fails the streams in it, no other.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from pocketcli.engine.chunk import ChunkRun
from pocketcli.runtimes.base import BatchedDecoder, Runtime


class Listener(Protocol):
    """The side of a stream that Mimi work reports to."""

    @property
    def live(self) -> bool:
        """False once the stream was cancelled or failed: its latents are skipped."""
        ...

    def put(self, item: object) -> None:
        """Hands the reader a frame (or the end, or an error), in order."""
        ...

    def fail(self, exc: BaseException) -> None:
        """Ends the stream with ``exc`` (its reader raises it)."""
        ...

    @property
    def lane(self) -> int:
        """The Mimi lane its work goes to, the same for its whole life."""
        ...


@dataclass(eq=False)
class Decode:
    """A stream's latents on their way to Mimi, with the chunk that made them."""

    listener: Listener
    run: ChunkRun
    latents: np.ndarray


class MimiThread:
    """A thread that runs one lane of a scheduler's Mimi work, in the order it was handed over.

    Not a ``ThreadPoolExecutor``: that refuses new work once the interpreter begins
    to exit, and the scheduler must still be able to end its streams then.
    """

    def __init__(self, name: str = "pockettts-mimi") -> None:
        self._jobs: deque[Callable[[], None] | None] = deque()
        self._ready = threading.Condition()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, job: Callable[[], None], first: bool = False) -> None:
        """Queues ``job``; with ``first``, ahead of the work already queued."""
        with self._ready:
            if first:
                self._jobs.appendleft(job)
            else:
                self._jobs.append(job)
            self._ready.notify()

    def current(self) -> bool:
        return threading.current_thread() is self._thread

    def stop(self, timeout: float | None = None) -> None:
        """Runs what was handed over, then stops."""
        with self._ready:
            self._jobs.append(None)
            self._ready.notify()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            with self._ready:
                while not self._jobs:
                    self._ready.wait()
                job = self._jobs.popleft()
            if job is None:
                return
            job()  # never raises: a job reports its errors to its streams


class _Tick:
    """A tick's Mimi work handed over: done once its last job (in any lane) is."""

    def __init__(self, jobs: int, done: threading.Event) -> None:
        self.jobs = jobs
        self.done = done


class Mimi:
    """One scheduler's Mimi work: this tick's latents, the ticks handed over and not
    yet decoded (``ticks``, read under ``cond``), and the decoding itself."""

    def __init__(
        self,
        runtime: Runtime,
        decoder: BatchedDecoder | None,
        cond: threading.Condition,
        lanes: int = 1,
    ) -> None:
        """``lanes``: Mimi threads (0: decode in the caller's thread, no thread)."""
        self.runtime = runtime
        self.decoder = decoder
        self.cond = cond
        self.threads = [MimiThread(f"pockettts-mimi-{lane}") for lane in range(lanes)]
        self.ticks = 0  # ticks of work handed to the threads, not yet decoded
        self.batched_decodes = 0  # calls that decoded several streams at once
        self._waited: list[Decode] = []
        self._queued: list[Decode] = []

    @property
    def lanes(self) -> int:
        """Lanes the streams are spread over (1 without threads)."""
        return max(1, len(self.threads))

    def current(self) -> bool:
        """Whether this is one of the Mimi threads."""
        return any(thread.current() for thread in self.threads)

    def add(self, item: Decode, waited: bool) -> None:
        """Adds latents to this tick's work (``waited``: ahead of the queued work)."""
        (self._waited if waited else self._queued).append(item)

    def after(self, listener: Listener, action: Callable[[], None]) -> None:
        """Runs ``action`` once the work of ``listener`` handed over so far (this tick's
        too) is done."""
        self.submit()
        if not self.threads:
            action()
        else:
            self.threads[listener.lane].submit(action)

    def submit(self) -> threading.Event | None:
        """Hands this tick's work over, to each stream's lane. The tick counts once
        (``ticks``) until its last job is done; returns an event set then (None: there
        was no work, or it was decoded here, without threads)."""
        waited, queued = self._waited, self._queued
        self._waited, self._queued = [], []
        if not (waited or queued):
            return None
        if not self.threads:
            for items in (waited, queued):
                self.decode(items)
            return None
        jobs = [
            (lane, first, part)
            for lane in range(len(self.threads))
            for first, items in ((True, waited), (False, queued))
            if (part := [item for item in items if item.listener.lane == lane])
        ]
        tick = _Tick(len(jobs), threading.Event())
        with self.cond:
            self.ticks += 1
        for lane, first, part in jobs:
            self.threads[lane].submit(lambda part=part: self._job(part, tick), first)
        return tick.done

    @staticmethod
    def wait(handed: list[threading.Event | None]) -> None:
        """Returns once the work ``submit`` gave these events for is done."""
        for done in handed:
            if done is not None:
                done.wait()

    def stop(self, timeout: float | None = None) -> None:
        """Runs what was handed over, then stops every lane (``timeout`` for them all)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for thread in self.threads:
            thread.stop(None if deadline is None else max(0.0, deadline - time.monotonic()))

    def _job(self, items: list[Decode], tick: _Tick) -> None:
        try:
            self.decode(items)
        except Exception as exc:  # not one call's failure (those fail their own streams)
            _fail(items, exc)
        finally:
            with self.cond:
                tick.jobs -= 1
                last = tick.jobs == 0
                if last:
                    self.ticks -= 1
                    self.cond.notify_all()
            if last:
                tick.done.set()

    def decode(self, items: list[Decode]) -> None:
        """Decodes in rounds (a stream's second piece, e.g. the next chunk's first frame,
        after its first), each round in calls of streams with as many latents."""
        rounds: list[dict[int, list[Decode]]] = []
        seen: Counter[int] = Counter()
        for item in items:
            n = seen[id(item.listener)]
            seen[id(item.listener)] += 1
            if n == len(rounds):
                rounds.append({})
            rounds[n].setdefault(item.latents.shape[0], []).append(item)
        for groups in rounds:
            for frames, group in groups.items():
                live = [item for item in group if item.listener.live]
                size = self.decoder.decode_rows(frames) if self.decoder is not None else 1
                for start in range(0, len(live), size):
                    self._call(live[start : start + size])

    def _call(self, part: list[Decode]) -> None:
        try:
            if len(part) == 1:
                audio = [self.runtime.decode(part[0].run.decoder, part[0].latents)]
            else:
                assert self.decoder is not None
                audio = list(
                    self.decoder.decode_batch(
                        [item.run.decoder for item in part],
                        np.stack([item.latents for item in part]),
                    )
                )
                self.batched_decodes += 1
        except Exception as exc:  # one call failed: every stream in it fails
            _fail(part, exc)
            return
        for item, samples in zip(part, audio, strict=True):
            for frame in item.run.frames(samples):
                item.listener.put(frame)


def _fail(items: list[Decode], exc: Exception) -> None:
    for item in items:
        item.listener.fail(exc)
