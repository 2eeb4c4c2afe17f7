"""One admission for every front end: up to ``max_streams`` generations at once per
loaded model, behind a bounded queue, each with a deadline.

A request (an HTTP speech or SSE request, a websocket or Wyoming turn, an MCP
tool call, a cloned voice) becomes a ``ModelJob``: a function returning an
iterator (audio frames, or a single cloned voice), the front end it came
from and its deadline. ``max_streams`` worker threads take the jobs in
arrival order and hand each item to the request's event loop as soon as it
exists; speech jobs running together are streams of the engine's scheduler
(``pocketcli.engine.scheduler``), rows of one batched call per frame.

Bounded everywhere: at most ``max_queue`` jobs wait (``submit`` refuses more
with ``Busy`` and an estimate of when to retry); a job holds at most
``ahead`` items its reader has not taken (the worker waits for the reader,
so a client that never reads makes the server hold a few frames, not the
whole text); and the worker checks the job's cancel flag (client gone,
deadline, shutdown) before every item and while it waits for the reader,
so a cancelled job stops within the frame being computed and its generation
is closed. ``cancel`` also runs the job's cancel hooks (a turn's session is
cancelled there, even while the worker waits inside it for text). A job
cancelled while it waits leaves the queue at once.

The front ends see ``JobRunner`` (``submit``, ``waiting``, ``active``,
``streams``, ``close``) built by ``make_admission``. A front end uses it in
a few lines::

    job = ModelJob(work, time.monotonic() + seconds, front="wyoming")
    try:
        runner.submit(job)
    except Busy as exc:          # answer "busy" in the protocol's shape
        ...
    while (kind_value := await job.next())[0] == ITEM: ...
    job.cancel("disconnected")   # whatever ends the request early
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from pocketcli import defaults

END = "end"
ITEM = "item"
ERROR = "error"

# Items (frames: 80 ms each) a job holds that its reader has not taken yet.
AHEAD = 8
# The front ends a job may come from: a fixed set of metric labels.
FRONTS = ("http", "sse", "websocket", "wyoming", "mcp")
_FOREVER = 86_400.0 * 365  # a deadline further than this is none (no timer)


@dataclass(frozen=True)
class AdmissionLimits:
    """What every server front end takes (``--max-streams``, ``--max-queue``,
    ``--request-timeout``), with one default and one maximum each."""

    max_streams: int = defaults.MAX_STREAMS  # generated at once (rows of one batch)
    max_queue: int = 4  # waiting while max_streams are generated; more are refused busy
    request_seconds: float = 300.0  # per stream, from acceptance to its last frame


# The sane maximum of each limit (the CLI refuses more).
ADMISSION_MAXIMA = {"max_streams": 256, "max_queue": 1000, "request_seconds": 86_400.0}


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
    """Work for the model, and the (bounded) channel its results come back through."""

    def __init__(
        self,
        work: Callable[[], Iterator[Any]],
        deadline: float,
        kind: str = "speech",
        front: str = "http",
        ahead: int = AHEAD,
    ) -> None:
        self.work = work
        self.kind = kind
        self.front = front
        self.deadline = deadline  # time.monotonic() by which the job must be done
        self.accepted = time.monotonic()
        self.started: float | None = None
        self.first_item: float | None = None
        self.finished: float | None = None
        self.items = 0
        self.items_after_cancel = 0
        self.cancel_reason: str | None = None
        self.ahead = max(1, ahead)
        self._cancel = threading.Event()
        self._hooks: list[Callable[[ModelJob], None]] = []  # the runner's, then the job's own
        self._done_hooks: list[Callable[[ModelJob], None]] = []
        self._left = False  # it has left the admission (its slot is free)
        self._space = threading.Condition()
        self._unread = 0  # items posted that the reader has not taken
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        # The deadline cancels the job whatever its worker waits for (text, the reader).
        left = deadline - time.monotonic()
        self._timer = (
            self._loop.call_later(max(0.0, left), self._expire) if left < _FOREVER else None
        )

    def _expire(self) -> None:
        self.cancel("deadline")

    # -- any thread -----------------------------------------------------------
    def cancel(self, reason: str) -> None:
        with self._space:
            if self._cancel.is_set():
                return
            self.cancel_reason = reason
            self._cancel.set()
            self._space.notify_all()  # a worker waiting for the reader stops waiting
            hooks = list(self._hooks)
        for hook in hooks:
            hook(self)

    def on_cancel(self, hook: Callable[[ModelJob], None]) -> None:
        """Runs ``hook(job)`` once when the job is cancelled (at once if it already is)."""
        with self._space:
            if not self._cancel.is_set():
                self._hooks.append(hook)
                return
        hook(self)

    def on_done(self, hook: Callable[[ModelJob], None]) -> None:
        """Runs ``hook(job)`` once the job has left the admission, its slot free: after
        its last item or its error, or withdrawn while waiting, before its reader is told
        its end (at once if it has left). The hook runs on the worker's thread (or the
        canceller's) and must not raise."""
        with self._space:
            if not self._left:
                self._done_hooks.append(hook)
                return
        hook(self)

    def _leave(self) -> None:
        with self._space:
            self._left = True
            hooks, self._done_hooks = self._done_hooks, []
        for hook in hooks:
            hook(self)

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def _post(self, kind: str, value: Any = None) -> None:
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody listens any more
            self._loop.call_soon_threadsafe(self._queue.put_nowait, (kind, value))

    # -- the worker -------------------------------------------------------------
    def _wait_for_reader(self) -> None:
        """Returns once the reader holds fewer than ``ahead`` items, the job is
        cancelled, or its deadline passes (then it is cancelled)."""
        with self._space:
            while self._unread >= self.ahead and not self._cancel.is_set():
                left = self.deadline - time.monotonic()
                if left <= 0:
                    break
                self._space.wait(left)
        if not self.cancelled and time.monotonic() > self.deadline:
            self.cancel("deadline")

    def _post_item(self, item: Any) -> None:
        with self._space:
            self._unread += 1
        self._post(ITEM, item)

    # -- the request's event loop ---------------------------------------------
    async def next(self, timeout: float | None = None) -> tuple[str, Any]:
        """The next ``(ITEM, value)``, ``(ERROR, exception)`` or ``(END, None)``."""
        if timeout is None:
            got = await self._queue.get()
        else:
            got = await asyncio.wait_for(self._queue.get(), timeout)
        if got[0] == ITEM:
            with self._space:
                self._unread -= 1
                self._space.notify_all()
        elif self._timer is not None:  # the job is over
            self._timer.cancel()
        return got


@dataclass(frozen=True)
class FrontCounts:
    """One front end's streams: running, waiting, admitted and refused so far."""

    active: int = 0
    waiting: int = 0
    admitted: int = 0
    refused: int = 0


class JobRunner(Protocol):
    """What a front end needs of whatever runs its jobs."""

    @property
    def waiting(self) -> int: ...

    @property
    def active(self) -> int: ...

    def streams(self) -> dict[str, FrontCounts]:
        """Each front end's streams (every one of ``FRONTS``, zeros included)."""
        ...

    def submit(self, job: ModelJob) -> None:
        """Queues the job, or raises ``Busy`` / ``ShuttingDown``."""

    def close(self, timeout: float) -> None:
        """Refuses new work, cancels what waits and runs, waits up to ``timeout`` s."""


def make_admission(
    max_queue: int, on_change: Callable[[], None] | None = None, max_streams: int = 1
) -> JobRunner:
    """The admission of one loaded model: ``max_streams`` jobs at a time, ``max_queue``
    waiting."""
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
        self._admitted: Counter[str] = Counter()
        self._refused: Counter[str] = Counter()
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

    def streams(self) -> dict[str, FrontCounts]:
        with self._cond:
            active = Counter(job.front for job in self._running)
            waiting = Counter(job.front for job in self._waiting)
            return {
                front: FrontCounts(
                    active[front], waiting[front], self._admitted[front], self._refused[front]
                )
                for front in FRONTS
            }

    def submit(self, job: ModelJob) -> None:
        with self._cond:
            if self._closed:
                raise ShuttingDown("the server is shutting down")
            # ``max_streams`` jobs run and ``max_queue`` wait. Between two jobs a worker
            # has freed its slot but not yet taken the next: count jobs, not the queue alone.
            if self.active + len(self._waiting) >= self.max_streams + self.max_queue:
                self._refused[job.front] += 1
                ahead = len(self._waiting) + 1
                seconds = ahead * self._mean_seconds / self.max_streams
                raise Busy(max(1, math.ceil(seconds)))
            self._admitted[job.front] += 1
            job.on_cancel(self._withdraw)
            self._waiting.append(job)
            self._cond.notify()
        self._on_change()

    def _withdraw(self, job: ModelJob) -> None:
        """A job cancelled while waiting leaves the queue (and its request hears why)."""
        with self._cond:
            if job not in self._waiting:
                return
            self._waiting.remove(job)
        job._leave()
        job._post(ERROR, Cancelled(job.cancel_reason or "cancelled"))
        self._on_change()

    def close(self, timeout: float) -> None:
        """Refuses new work, cancels what waits and what runs, waits for the workers."""
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
            job._leave()  # before its end is posted: what follows it is asked for first
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
                job._wait_for_reader()  # also: the deadline
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
                job._post_item(item)
        finally:
            close = getattr(it, "close", None)
            if close is not None:
                close()
