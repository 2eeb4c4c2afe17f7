"""Up to ``max_streams`` generations at once per loaded model, behind a bounded queue.

A request becomes a ``ModelJob``: a function returning an iterator (audio frames,
or a single cloned voice). ``max_streams`` worker threads take the jobs in
arrival order and hand each item to the request's event loop as soon as it
exists; speech jobs running together are streams of the engine's scheduler
(``pocketcli.engine.scheduler``), rows of one batched call per frame. Before
every item the worker checks the job's cancel flag (client gone, deadline,
shutdown), so a cancelled job stops within the frame being computed. When
``max_queue`` jobs already wait, ``submit`` refuses with an estimate of when
to retry. A job cancelled while it waits leaves the queue at once.

The app sees only ``JobRunner`` (``submit``, ``waiting``, ``active``, ``close``)
and builds it with ``make_scheduler``: another engine (several streams at once)
is a change to this module alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any, Protocol

END = "end"
ITEM = "item"
ERROR = "error"


class Busy(Exception):
    def __init__(self, retry_after: int) -> None:
        super().__init__(f"the server is busy; retry in {retry_after} s")
        self.retry_after = retry_after


class ShuttingDown(Exception):
    """The server is stopping and takes no new work."""


class Cancelled(Exception):
    """The job was stopped (``reason``: disconnected, deadline, shutdown)."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"stopped: {reason}")
        self.reason = reason


class ModelJob:
    """Work for the model, and the channel its results come back through."""

    def __init__(
        self, work: Callable[[], Iterator[Any]], deadline: float, kind: str = "speech"
    ) -> None:
        self.work = work
        self.kind = kind
        self.deadline = deadline  # time.monotonic() by which the job must be done
        self.accepted = time.monotonic()
        self.started: float | None = None
        self.first_item: float | None = None
        self.finished: float | None = None
        self.items = 0
        self.items_after_cancel = 0
        self.cancel_reason: str | None = None
        self._cancel = threading.Event()
        self._on_cancel: Callable[[ModelJob], None] = lambda job: None  # set by the scheduler
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

    # -- any thread -----------------------------------------------------------
    def cancel(self, reason: str) -> None:
        if not self._cancel.is_set():
            self.cancel_reason = reason
            self._cancel.set()
            self._on_cancel(self)

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def _post(self, kind: str, value: Any = None) -> None:
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody listens any more
            self._loop.call_soon_threadsafe(self._queue.put_nowait, (kind, value))

    # -- the request's event loop ---------------------------------------------
    async def next(self, timeout: float | None = None) -> tuple[str, Any]:
        """The next ``(ITEM, value)``, ``(ERROR, exception)`` or ``(END, None)``."""
        if timeout is None:
            return await self._queue.get()
        return await asyncio.wait_for(self._queue.get(), timeout)


class JobRunner(Protocol):
    """What the app needs of whatever runs its jobs."""

    @property
    def waiting(self) -> int: ...

    @property
    def active(self) -> int: ...

    def submit(self, job: ModelJob) -> None:
        """Queues the job, or raises ``Busy`` / ``ShuttingDown``."""

    def close(self, timeout: float) -> None:
        """Refuses new work, cancels what waits and runs, waits up to ``timeout`` s."""


def make_scheduler(
    max_queue: int, on_change: Callable[[], None] | None = None, max_streams: int = 1
) -> JobRunner:
    """The server's job runner: ``max_streams`` jobs at a time, ``max_queue`` waiting."""
    return Admission(max_queue, on_change, max_streams)


class Admission:
    def __init__(
        self,
        max_queue: int,
        on_change: Callable[[], None] | None = None,
        max_streams: int = 1,
    ) -> None:
        self.max_queue = max_queue
        self.max_streams = max(1, max_streams)
        self._waiting: deque[ModelJob] = deque()
        self._running: list[ModelJob] = []
        self._closed = False
        self._cond = threading.Condition()
        self._mean_seconds = 1.0  # running mean of job durations, for Retry-After
        self._on_change = on_change or (lambda: None)
        self._threads = [
            threading.Thread(target=self._run, name=f"pockettts-model-{i}", daemon=True)
            for i in range(self.max_streams)
        ]
        for thread in self._threads:
            thread.start()

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    @property
    def active(self) -> int:
        return len(self._running)

    def submit(self, job: ModelJob) -> None:
        with self._cond:
            if self._closed:
                raise ShuttingDown("the server is shutting down")
            # ``max_streams`` jobs run and ``max_queue`` wait. Between two jobs a worker
            # has freed its slot but not yet taken the next: count jobs, not the queue alone.
            if self.active + len(self._waiting) >= self.max_streams + self.max_queue:
                ahead = len(self._waiting) + 1
                seconds = ahead * self._mean_seconds / self.max_streams
                raise Busy(max(1, math.ceil(seconds)))
            job._on_cancel = self._withdraw
            self._waiting.append(job)
            self._cond.notify()
        self._on_change()

    def _withdraw(self, job: ModelJob) -> None:
        """A job cancelled while waiting leaves the queue (and its request hears why)."""
        with self._cond:
            if job not in self._waiting:
                return
            self._waiting.remove(job)
        job._post(ERROR, Cancelled(job.cancel_reason or "cancelled"))
        self._on_change()

    def close(self, timeout: float) -> None:
        """Refuses new work, cancels what waits and what runs, waits for the worker."""
        with self._cond:
            self._closed = True
            jobs = [*self._waiting, *self._running]
            self._cond.notify_all()
        for job in jobs:
            job.cancel("shutdown")
        end = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, end - time.monotonic()))

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._waiting and not self._closed:
                    self._cond.wait()
                if not self._waiting:
                    return
                job = self._waiting.popleft()
                self._running.append(job)
            self._on_change()
            outcome = self._execute(job)
            # The slot is free before the client can hear the end: a client that asks
            # again at once never finds its own finished job still counted.
            with self._cond:
                self._running.remove(job)
            job._post(*outcome)
            self._on_change()

    def _execute(self, job: ModelJob) -> tuple[str, Any]:
        job.started = time.monotonic()
        try:
            self._produce(job)
            outcome: tuple[str, Any] = (END, None)
        except Exception as exc:  # handed to the request, which answers or logs it
            outcome = (ERROR, exc)
        job.finished = time.monotonic()
        self._mean_seconds = 0.8 * self._mean_seconds + 0.2 * (job.finished - job.started)
        return outcome

    @staticmethod
    def _produce(job: ModelJob) -> None:
        if job.cancelled:
            raise Cancelled(job.cancel_reason or "cancelled")
        it = iter(job.work())
        try:
            while True:
                if not job.cancelled and time.monotonic() > job.deadline:
                    job.cancel("deadline")
                if job.cancelled:
                    raise Cancelled(job.cancel_reason or "cancelled")
                try:
                    item = next(it)
                except StopIteration:
                    return
                if job.cancelled:  # cancelled while this frame was being made
                    job.items_after_cancel += 1
                if job.first_item is None:
                    job.first_item = time.monotonic()
                job.items += 1
                job._post(ITEM, item)
        finally:
            close = getattr(it, "close", None)
            if close is not None:
                close()
