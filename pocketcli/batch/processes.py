"""``--jobs N``: N worker processes on this machine, each loading the model once.

Processes are started with ``spawn`` (no forked ONNX Runtime thread pools).
Each has its own pipe; the driver keeps ``DEPTH`` lines queued per worker so
none waits for the driver, and knows which lines each one holds. A worker that
dies (killed, out of memory) costs only the lines it held: they are made again
by a replacement, and a line that has killed ``MAX_ATTEMPTS`` workers (the line
being made when each died; the ones queued behind it are not blamed) is
reported as failed. A worker that dies while it loads the model is replaced
too; the run stops only when ``MAX_ATTEMPTS`` in a row die so with no worker
healthy. Workers ignore Ctrl-C; the driver stops them (and they stop by
themselves when the driver's end of the pipe closes).

``concurrent.futures.ProcessPoolExecutor`` is not used: one dead worker breaks
the whole pool (every pending line fails) and it cannot say which lines the
dead worker held.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import signal
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path

from pocketcli.batch.plan import Job
from pocketcli.batch.queue import JobQueue
from pocketcli.batch.worker import LineResult, LineWorker, ModelSpec, describe_error
from pocketcli.errors import UserError
from pocketcli.options import SpeakOptions

DEPTH = 2  # lines queued per worker
MAX_ATTEMPTS = 3  # workers a line may take down before it is reported as failed


def _worker_main(conn: Connection, spec: ModelSpec, voice, options: SpeakOptions) -> None:
    # The driver decides when to stop: Ctrl-C (sent to the whole process group) is
    # ignored here; SIGTERM (`timeout`, `docker stop`, `kill -- -PGID`) ends a worker
    # at once and quietly: the console script's handlers, installed again when spawn
    # imports it, would raise and print a traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        _serve(conn, spec, voice, options)
    except OSError:  # the driver is gone (killed or interrupted): end quietly
        return


def _serve(conn: Connection, spec: ModelSpec, voice, options: SpeakOptions) -> None:
    try:
        worker = LineWorker.load(spec, voice, options)
    except Exception as exc:
        conn.send(("failed", describe_error(exc)))
        return
    conn.send(("ready", worker.name))
    while True:
        try:
            job = conn.recv()
        except EOFError:
            return
        if job is None:
            return
        result = worker.make(job)
        try:
            conn.send(("line", result))
        except OSError:  # nobody will publish this line
            if result.path is not None:
                Path(result.path).unlink(missing_ok=True)
            raise


def how_it_ended(exitcode: int | None) -> str:
    if exitcode is None:
        return "stopped answering"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"killed by {name}" + (" (out of memory?)" if name == "SIGKILL" else "")
    return f"exit status {exitcode}"


@dataclass
class _Slot:
    process: multiprocessing.process.BaseProcess
    conn: Connection
    name: str = ""
    ready: bool = False
    broken: bool = False  # a line could not be sent: it died, its sentinel will say so
    held: deque = field(default_factory=deque)  # sent, in order: held[0] is being made


class ProcessExecutor:
    def __init__(
        self,
        spec: ModelSpec,
        voice,
        options: SpeakOptions,
        workers: int,
        note: Callable[[str], None],
    ) -> None:
        self.spec, self.voice, self.options = spec, voice, options
        self.workers = workers
        self.note = note
        self._context = multiprocessing.get_context("spawn")
        self._slots: list[_Slot] = []
        self._restarts = 0
        self._load_deaths = 0  # workers in a row that died before they were ready

    def _start(self) -> None:
        ours, theirs = self._context.Pipe(duplex=True)
        process = self._context.Process(
            target=_worker_main,
            args=(theirs, self.spec, self.voice, self.options),
            name="pockettts-batch-worker",
            daemon=True,
        )
        process.start()
        theirs.close()
        self._slots.append(_Slot(process, ours))

    def run(self, jobs: Iterator[Job]) -> Iterator[LineResult]:
        queue = JobQueue(jobs, MAX_ATTEMPTS)
        for _ in range(self.workers):
            self._start()
        while True:
            for slot in self._slots:
                self._feed(slot, queue)
            if queue.empty and not any(s.held for s in self._slots):
                return
            handles = {s.conn: s for s in self._slots}
            handles |= {s.process.sentinel: s for s in self._slots}
            for handle in wait(list(handles)):
                slot = handles[handle]
                if slot not in self._slots:
                    continue  # already buried this round
                if handle is slot.conn and slot.conn.poll():
                    try:
                        yield from self._receive(slot)
                        continue
                    except (EOFError, OSError):
                        pass
                elif handle is slot.conn or slot.process.is_alive():
                    continue
                yield from self._bury(slot, queue)

    def _feed(self, slot: _Slot, queue: JobQueue) -> None:
        """Tops up a ready worker's lines. One that has just died (its pipe broken) keeps
        what it was given: its sentinel fires and ``_bury`` hands the lines on."""
        if not slot.ready or slot.broken:
            return
        group = queue.take(max(0, DEPTH - len(slot.held)))
        for index, job in enumerate(group):
            try:
                slot.conn.send(job)
            except OSError:
                slot.broken = True
                queue.give_back(group[index:], "", blamed=[])  # never got: first in line again
                return
            slot.held.append(job)

    def _receive(self, slot: _Slot) -> Iterator[LineResult]:
        kind, payload = slot.conn.recv()
        if kind == "failed":
            raise UserError(f"a batch worker cannot load the model: {payload}")
        if kind == "ready":
            slot.ready, slot.name = True, payload
            self._load_deaths = 0
            return
        slot.held.popleft()
        yield payload

    def _bury(self, slot: _Slot, queue: JobQueue) -> Iterator[LineResult]:
        """A worker died: keep what it finished, make its other lines again elsewhere."""
        try:
            while slot.conn.poll():
                yield from self._receive(slot)
        except (EOFError, OSError):
            pass
        slot.process.join(timeout=5)
        how = how_it_ended(slot.process.exitcode)
        self._slots.remove(slot)
        slot.conn.close()
        if not slot.ready:
            self._load_deaths += 1
            if self._load_deaths >= MAX_ATTEMPTS and not any(s.ready for s in self._slots):
                raise UserError(
                    f"batch workers die while loading the model ({how}; "
                    f"{self._load_deaths} in a row); stopping"
                )
            self.note(
                f"pockettts: a batch worker died while loading the model ({how}); starting another"
            )
        else:
            held = list(slot.held)
            failed, again = queue.give_back(held, how, blamed=held[:1])
            yield from failed
            self.note(
                f"pockettts: worker {slot.name or slot.process.pid} died ({how}); "
                f"{again} line(s) it held will be made again"
            )
        self._restarts += 1
        if self._restarts > 4 * self.workers + MAX_ATTEMPTS:
            raise UserError(f"batch workers keep dying ({how}); stopping")
        self._start()

    def close(self) -> None:
        """Asks every worker to stop; the ones still busy (an interrupted run) are killed."""
        busy = any(slot.held for slot in self._slots)
        for slot in self._slots:
            with contextlib.suppress(OSError, ValueError):
                slot.conn.send(None)
        deadline = time.monotonic() + (0.5 if busy else 5.0)
        for slot in self._slots:
            slot.process.join(timeout=max(0.0, deadline - time.monotonic()))
        for slot in self._slots:
            if slot.process.is_alive():
                slot.process.kill()
        for slot in self._slots:
            slot.process.join(timeout=5)
            slot.conn.close()
        self._slots = []
