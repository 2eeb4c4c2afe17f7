"""The engine: every stream of one loaded model, advanced one frame per tick.

Every way of speaking (``synthesize``, ``stream``, sessions, ``synthesize_many``,
the CLI, batch lines, the servers) submits its text here; a lone stream is a
scheduler with one row. Continuous batching, as LLM servers do it: streams join
and leave at frame boundaries. A tick is three steps (``_turn``):

1. choose the rows (``_schedule``): wait until a stream may make a frame, move
   each to its next chunk or pause, and pick the chunks that step now (a joining
   chunk's text prefill rides on its first frame; the prefills entering a tick
   hold at most one full chunk's tokens between them, or are one prefill, once a
   stream under way has made ``JOIN_BURST_FRAMES`` frames: joins arriving together
   start together);
2. run the model on them (``rows.RowCalls``: the runtime adapted once, batched,
   one row at a time, or sampling in its graph): the joining streams first, their
   first frames handed to Mimi as they are made (``JOIN_GROUP`` at a time), then
   the streams under way;
3. take the outputs (``_take_outputs``): kept latents go to Mimi
   (``engine.mimi``, on its own thread, decoding while the next tick's FlowLM
   runs), a pause gives its silence, as many frames as its reader may still take.

All of a stream's state is on its ``Row``. A reader that falls ``max_ahead`` frames
behind (speech or silence alike) sits its stream out until it reads, so memory is
bounded by the model, not by the text or the reader. ``StreamHandle.cancel`` sets a
flag the next tick reads: the stream makes no frame after it. A tick of first
frames only (no stream under way) waits for their audio before the next, so that
decode has the cores to itself; a stream with nothing unread (its first frame, or a
reader that has caught up) has its latents decoded ahead of the others' queued work.
Mimi may be at most ``MAX_MIMI_TICKS`` ticks behind, unless a stream is yet to start.
"""

from __future__ import annotations

import asyncio
import atexit
import itertools
import queue
import threading
import weakref
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np

from pocketcli.defaults import MAX_TOKENS
from pocketcli.engine.chunk import ChunkRun, ChunkTrace, Frame, GenerationSettings, PauseRun
from pocketcli.engine.mimi import Decode, Mimi
from pocketcli.engine.noise import NoiseSource, peekable
from pocketcli.engine.rows import BatchedCalls, RowCalls, RowWork, row_calls
from pocketcli.normalize.timeline import Pause
from pocketcli.runtimes.base import Runtime, decode_batching, decode_lanes
from pocketcli.text import ChunkPlan
from pocketcli.voices.state import VoiceState

# Frames a stream may have made but not yet had read before it sits out (about 2.5 s).
MAX_AHEAD_FRAMES = 32
# Ticks of Mimi work queued (the one being decoded included) before the next tick waits
# (unless a stream is yet to start: it does not wait for the others' audio).
# Where Mimi is slower than the FlowLM (many full-size streams on two cores), running
# ahead only piled frames up until streams sat out by turns, each turn restacking the
# KV caches and queueing a joining stream's first frame behind seconds of other audio.
MAX_MIMI_TICKS = 2
# Text tokens whose prefills may share a tick: one full chunk's (a prefill's cost grows
# with its tokens), so several short texts joining at once start in the same tick.
PREFILL_TOKENS_PER_TICK = MAX_TOKENS
# Frames a stream under way makes before joins' prefills are held to that budget for
# it (about a third of a second): streams that arrive together (16 clients connecting
# at once) start together, instead of one long prefill a tick putting the last one's
# first audio a second behind the first's.
JOIN_BURST_FRAMES = 4
# Joining streams whose first frames go to Mimi together (one per Mimi lane), before
# the next joins' prefills run.
JOIN_GROUP = 2
# How long the exit of a process waits for a scheduler still running to stop.
EXIT_WAIT_SECONDS = 5.0

_END = object()


@dataclass(frozen=True)
class Mark:
    """An item a stream's source puts between its chunks: handed to the reader in order
    with the frames (a session marks each text's end); chunk numbers restart after it."""

    value: object


class StreamHandle:
    """One stream's frames, in order: iterate (blocking), ``async for``, or ``cancel()``."""

    def __init__(self, scheduler: Scheduler, stream_id: int) -> None:
        self.id = stream_id
        self._scheduler = scheduler
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._cancelled = threading.Event()
        self._left = threading.Event()  # the stream is out of the scheduler's ticks
        self._done = False
        self.failed = False

    def __iter__(self) -> Iterator[Frame]:
        return self

    def __next__(self) -> Frame:
        while (item := self.next_item()) is not None:
            if isinstance(item, Frame):
                return item
        raise StopIteration

    def __aiter__(self) -> StreamHandle:
        return self

    async def __anext__(self) -> Frame:
        frame = await asyncio.get_running_loop().run_in_executor(None, next, self, None)
        if frame is None:
            raise StopAsyncIteration
        return frame

    def next_item(self) -> Frame | Mark | None:
        """The next frame or mark (blocking); None at the end. Raises the stream's error."""
        if self._done:
            return None
        item = self._queue.get()
        if item is _END or self._cancelled.is_set():
            self._done = True
            return None
        if isinstance(item, BaseException):
            self._done = True
            self.cancel()  # a stream failed by its Mimi work still has to leave the ticks
            raise item
        assert isinstance(item, Frame | Mark)
        self._scheduler._frame_read(self.id)
        return item

    def cancel(self, wait: bool = False, timeout: float | None = None) -> bool:
        """Stops the stream at the next tick; frames not yet read are dropped. With
        ``wait``, returns once the stream has left the scheduler's ticks (or ``timeout``
        seconds have passed). Returns whether it has left."""
        if not self._cancelled.is_set():
            self._cancelled.set()
            self._queue.put(_END)
            self._scheduler._wake()
        if wait and not self._scheduler._in_loop():
            self._left.wait(timeout)
        return self._left.is_set()

    close = cancel

    def wake(self) -> None:
        """Tells the scheduler the stream's source has more (a session's new text)."""
        self._scheduler._wake()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    @property
    def ahead(self) -> int:
        """Frames made and not yet read (0 once the stream has left the ticks)."""
        return self._scheduler._ahead(self.id)


@dataclass(eq=False)
class Row:
    """One stream, all the scheduler knows of it."""

    handle: StreamHandle
    items: Iterator[ChunkPlan | Pause | Mark]
    ready: Callable[[], bool]  # the source has an item now (a session may wait for text)
    voice: VoiceState | None
    noise: NoiseSource
    settings: GenerationSettings
    on_chunk: Callable[[ChunkTrace], None] | None
    run: ChunkRun | None = None
    pause: PauseRun | None = None
    chunk_index: int = 0
    unread: int = 0  # frames (and marks) made, not yet read
    failed: bool = False
    started: bool = False  # a frame of it (speech or pause) is on its way
    made: int = 0  # frames (and marks) it has made
    lane: int = 0  # its Mimi lane (``engine.mimi``)

    @property
    def live(self) -> bool:
        return not (self.failed or self.handle.cancelled)

    def busy(self) -> bool:
        """It is inside a chunk that wants a frame, or a pause with silence left."""
        if self.pause is not None:
            return not self.pause.done
        return self.run is not None and self.run.wants_frame()

    def may_run(self, max_ahead: int) -> bool:
        """Its reader may take another frame, and it has something to make one of."""
        if self.unread >= max_ahead:
            return False
        return self.run is not None or self.pause is not None or self.ready()

    def put(self, item: object) -> None:
        self.handle._queue.put(item)

    def fail(self, exc: BaseException) -> None:
        """From the Mimi thread: its latents are skipped from now on, the next tick drops
        it, and the reader hears ``exc`` after the frames decoded before it."""
        self.failed = self.handle.failed = True
        self.put(exc)


@dataclass
class SchedulerStats:
    """What the scheduler did (for /metrics and benchmarks)."""

    ticks: int = 0
    frames: int = 0
    batch_sizes: Counter[int] = field(default_factory=Counter)  # rows per tick -> ticks
    batched_calls: int = 0  # FlowLM calls that advanced several rows at once
    batched_decodes: int = 0  # Mimi calls that decoded several streams at once


class Scheduler:
    """Advances every submitted stream of one runtime, one frame per tick, in one thread.

    ``threaded_decoder`` False: Mimi decodes in the scheduler's thread (no Mimi
    thread); ``batched`` False: one row at a time even where the runtime batches.
    """

    def __init__(
        self,
        runtime: Runtime,
        *,
        max_ahead: int = MAX_AHEAD_FRAMES,
        threaded_decoder: bool = True,
        batched: bool = True,
    ) -> None:
        self.runtime = runtime
        self.max_ahead = max_ahead
        self._calls: RowCalls = row_calls(runtime, batched)
        self._cond = threading.Condition()
        decoder = decode_batching(runtime) if batched else None
        lanes = decode_lanes(runtime) if threaded_decoder else 0
        self._mimi = Mimi(runtime, decoder, self._cond, lanes)
        self._rows: dict[int, Row] = {}
        self._ids = itertools.count()
        self._thread: threading.Thread | None = None
        self._closed = False
        # Set while the loop waits: for anything (``_waiting``), or with no Mimi work in
        # flight either (``_idle``: nothing will change until a reader or a source does).
        self._waiting = threading.Event()
        self._idle = threading.Event()
        self._stats = SchedulerStats()
        _LIVE.add(self)

    @property
    def batches(self) -> bool:
        """Whether ticks use the runtime's batched calls (else one row at a time)."""
        return isinstance(self._calls, BatchedCalls)

    @property
    def active_streams(self) -> int:
        with self._cond:
            return len(self._rows)

    @property
    def stats(self) -> SchedulerStats:
        self._stats.batched_calls = self._calls.batched_calls
        self._stats.batched_decodes = self._mimi.batched_decodes
        return self._stats

    @property
    def _mimi_ticks(self) -> int:
        return self._mimi.ticks

    def submit(
        self,
        chunks: Iterable[ChunkPlan | Pause | Mark],
        voice: VoiceState | None,
        noise: NoiseSource,
        settings: GenerationSettings,
        on_chunk: Callable[[ChunkTrace], None] | None = None,
        *,
        ready: Callable[[], bool] | None = None,
    ) -> StreamHandle:
        """Starts a stream (it joins at the next tick); read its frames from the handle.
        ``ready``: whether ``chunks`` has an item now (else it is asked again once the
        handle's ``wake`` is called); None: always."""
        with self._cond:
            if self._closed:
                raise RuntimeError("the scheduler is closed")
            handle = StreamHandle(self, next(self._ids))
            row = Row(
                handle, iter(chunks), ready or _always, voice, peekable(noise), settings, on_chunk
            )
            # The Mimi lane with the fewest streams: a tick's decodes split evenly.
            lanes = Counter(r.lane for r in self._rows.values())
            row.lane = min(range(self._mimi.lanes), key=lambda lane: lanes[lane])
            self._rows[handle.id] = row
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._loop, name="pockettts-scheduler", daemon=True
                )
                self._thread.start()
            self._rest(False)
            self._cond.notify_all()
        return handle

    def close(self, timeout: float | None = None) -> None:
        """Cancels every stream and stops the scheduler's threads (waiting at most
        ``timeout`` seconds for each, None: until they stop)."""
        _LIVE.discard(self)
        with self._cond:
            self._closed = True
            rows = list(self._rows.values())
            self._cond.notify_all()
        for row in rows:
            row.handle.cancel()
        if self._thread is not None and not self._in_loop():
            self._thread.join(timeout)
        self._mimi.stop(timeout)
        for row in rows:
            row.handle._left.set()

    # -- bookkeeping ------------------------------------------------------
    def _in_loop(self) -> bool:
        """Whether this is the scheduler's thread or one of its Mimi threads."""
        return threading.current_thread() is self._thread or self._mimi.current()

    def _wake(self) -> None:
        with self._cond:
            self._rest(False)
            self._cond.notify_all()

    def _frame_read(self, sid: int) -> None:
        with self._cond:
            row = self._rows.get(sid)
            if row is not None:
                row.unread -= 1
                if row.unread == self.max_ahead - 1:
                    self._rest(False)
                    self._cond.notify_all()

    def _rest(self, waiting: bool) -> None:
        """Marks the loop as waiting (or not): called with ``_cond`` held."""
        if waiting:
            self._waiting.set()
            if self._mimi.ticks == 0:
                self._idle.set()
        else:
            self._waiting.clear()
            self._idle.clear()

    def _ahead(self, sid: int) -> int:
        with self._cond:
            row = self._rows.get(sid)
            return row.unread if row is not None else 0

    def wait_idle(self, timeout: float) -> bool:
        """Waits until no stream can make a frame and no Mimi work is in flight (every
        stream ended or waiting for its reader or its source); False if ``timeout``
        seconds pass first."""
        return self._idle.wait(timeout)

    def _drop(self, row: Row) -> None:
        with self._cond:
            self._rows.pop(row.handle.id, None)
        row.handle._left.set()

    def _leave(self, row: Row, item: object = _END) -> None:
        """Removes a stream; its end (or error) follows the frames already on their way."""
        self._drop(row)
        self._mimi.after(row, lambda: row.put(item))

    def _fail(self, row: Row, exc: BaseException) -> None:
        row.failed = row.handle.failed = True
        row.run = row.pause = None
        self._leave(row, exc)

    # -- the loop ---------------------------------------------------------
    def _loop(self) -> None:
        while True:
            try:
                if not self._turn():
                    return
            except Exception as exc:  # a fault of the loop itself: its streams hear it
                with self._cond:
                    rows = list(self._rows.values())
                for row in rows:
                    self._fail(row, exc)

    def _turn(self) -> bool:
        """One tick: choose the rows, run the model on them, take the outputs (False
        once the scheduler is closed). Streams joining this tick run first and their
        first frames go to Mimi at once: a join's first audio is decoded while the
        streams under way step, not after them."""
        chosen = self._schedule()
        if chosen is None:
            return False
        speaking = [row for row in chosen if row.run is not None]
        joining = [row for row in speaking if row.run is not None and row.run.first]
        going = [row for row in speaking if row.run is not None and not row.run.first]
        together = len(speaking) > 1
        if joining:
            # The joins' first frames go to Mimi a group at a time, as they are made:
            # the first ones' audio is decoded while the later ones' prefills run.
            handed = []
            for start in range(0, len(joining), JOIN_GROUP):
                group = joining[start : start + JOIN_GROUP]
                self._take_outputs(self._run(group, together), [])
                handed.append(self._mimi.submit())
            # Only first frames this tick (no stream under way): the next tick waits
            # for their audio, so the decode has the cores to itself.
            if not going:
                self._mimi.wait(handed)
        pausing = [row for row in chosen if row.pause is not None]
        self._take_outputs(self._run(going, together), pausing)
        self._mimi.submit()
        if speaking:
            self._stats.ticks += 1
            self._stats.batch_sizes[len(speaking)] += 1
        return True

    # -- 1. choose the rows ------------------------------------------------
    def _schedule(self) -> list[Row] | None:
        """The rows that make a frame (or silence) this tick; None once closed."""
        runnable = self._runnable()
        if runnable is None:
            return None
        chosen: list[Row] = []
        prefill_tokens = 0
        # With no stream under way but ones just started (``JOIN_BURST_FRAMES``), the
        # joins arrived together: they all start now.
        settled = any(r.made >= JOIN_BURST_FRAMES for r in runnable)
        budget = PREFILL_TOKENS_PER_TICK if settled else None
        for row in runnable:
            if not self._advance(row):
                continue
            if row.run is not None and row.run.first:
                tokens = row.run.plan.n_tokens
                if budget is not None and prefill_tokens and prefill_tokens + tokens > budget:
                    continue  # its prefill waits for the next tick
                prefill_tokens += tokens
            chosen.append(row)
        return chosen

    def _runnable(self) -> list[Row] | None:
        """Waits for rows that may make a frame (None once the scheduler is closed)."""
        with self._cond:
            while not self._closed:
                for row in [r for r in self._rows.values() if not r.live]:
                    self._rows.pop(row.handle.id, None)  # cancelled, or failed by Mimi
                    row.handle._left.set()
                runnable = [r for r in self._rows.values() if r.may_run(self.max_ahead)]
                # A stream yet to start does not wait for Mimi to catch up: its first
                # frame overtakes the queued work, so waiting would only delay it.
                if runnable and (
                    self._mimi.ticks < MAX_MIMI_TICKS or any(not r.started for r in runnable)
                ):
                    self._rest(False)
                    return runnable
                self._rest(True)
                self._cond.wait()
        return None

    def _advance(self, row: Row) -> bool:
        """Moves ``row`` on to a chunk that wants a frame or a pause with silence left;
        False when it has none this tick (ended, failed, waiting for its source)."""
        try:
            while not row.busy():
                self._finish_run(row)
                if not row.ready():
                    return False
                item = next(row.items, None)
                if item is None:
                    self._leave(row)
                    return False
                self._start(row, item)
        except Exception as exc:
            self._fail(row, exc)
            return False
        return True

    def _finish_run(self, row: Row) -> None:
        if row.run is not None:
            self._decode(row, row.run, row.run.flush())
        row.run = row.pause = None

    def _start(self, row: Row, item: ChunkPlan | Pause | Mark) -> None:
        if isinstance(item, Mark):
            row.chunk_index = 0
            self._emit(row, item)  # unread like a frame: the next latents stay behind it
        elif isinstance(item, Pause):
            mimi = self.runtime.config.mimi
            row.pause = PauseRun(item.seconds, mimi.sample_rate, mimi.samples_per_frame)
        else:
            trace = ChunkTrace(item, [])
            if row.on_chunk is not None:
                row.on_chunk(trace)
            row.run = ChunkRun(self.runtime, row.chunk_index, item, row.voice, row.settings, trace)
            row.chunk_index += 1

    # -- 2. run the model on them ------------------------------------------
    def _run(self, rows: list[Row], together: bool) -> list[tuple[Row, RowWork]]:
        """Each row's next frame: its EOS logit, and its latent when the frame is kept.
        ``together``: the tick has other rows too (the runtime's batched calls)."""
        works = []
        for row in rows:
            assert row.run is not None
            works.append((row, RowWork(row.run, row.noise, row.settings.decode_steps)))
        if not works:
            return []
        try:
            self._calls.run([work for _, work in works], together)
        except Exception as exc:  # one call failed: every row in it fails
            for row in rows:
                self._fail(row, exc)
            return []
        return works

    # -- 3. take the outputs -----------------------------------------------
    def _take_outputs(self, works: list[tuple[Row, RowWork]], pausing: list[Row]) -> None:
        for row, work in works:
            if work.error is not None:
                self._fail(row, work.error)
            elif work.latent is not None and row.run is not None:
                with self._cond:
                    row.unread += 1  # a frame from now on, decoded or not
                row.made += 1
                try:
                    self._decode(row, row.run, row.run.take_latent(work.latent, work.eos))
                    self._stats.frames += 1
                except Exception as exc:
                    self._fail(row, exc)
        for row in pausing:
            assert row.pause is not None
            with self._cond:
                room = self.max_ahead - row.unread
            for frame in row.pause.take(room):
                self._emit(row, frame)

    def _emit(self, row: Row, item: Frame | Mark) -> None:
        """Hands the reader ``item`` after the latents already on their way."""
        row.started = True
        row.made += 1
        with self._cond:
            row.unread += 1
        self._mimi.after(row, lambda: row.put(item))

    def _decode(self, row: Row, run: ChunkRun, latents: np.ndarray | None) -> None:
        if latents is None:
            return
        row.started = True
        with self._cond:
            # Nothing unread but these: nothing of this stream is on its way either, so
            # its latents may overtake the other streams' queued work.
            waited = row.unread == latents.shape[0]
        self._mimi.add(Decode(row, run, latents), waited)


def _always() -> bool:
    return True


# Schedulers not yet closed. When the process exits, each is closed (its streams
# cancelled, its threads stopped) before the interpreter is torn down, so no thread is
# left inside ONNX Runtime or printing a traceback at exit.
_LIVE: weakref.WeakSet[Scheduler] = weakref.WeakSet()


@atexit.register
def _close_at_exit() -> None:
    for scheduler in list(_LIVE):
        scheduler.close(EXIT_WAIT_SECONDS)
