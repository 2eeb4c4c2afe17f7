"""Many streams on one loaded model: every tick, each active stream advances one frame.

Continuous batching, as LLM servers do it: streams join and leave at frame
boundaries. A tick makes one FlowLM call for every stream that is past its
first frame (each row at its own position, with its own mask), one flow-head
call for all of them, and hands the tick's latents to one Mimi thread, which
decodes them while the next tick's FlowLM runs: in one batched call for the
streams with as many latents (states stacked along the batch) when the runtime
has one (``pocketcli.runtimes.base.decode_batching``), up to the rows it says a
call should take, else one call per stream. A joining stream's text
prefill rides on its first frame, as alone; the prefills entering a tick hold at
most one full chunk's tokens between them (or are one prefill), so a join stalls
the others by about one prefill.

A runtime without batched calls (``pocketcli.runtimes.base.batching``) is
driven by the same ticks one row at a time, round-robin per frame, so first
audio stays fair. A stream alone in its tick takes the row calls too: alone,
it gives exactly the samples of ``generate_frames``.

Each stream's frames come out in order, through its ``StreamHandle``, as soon
as they are decoded. A tick of first frames only (no stream under way) waits for
their audio before the next, as ``generate_frames`` waits for a chunk's first
frame, so that decode has the cores to itself. A stream with nothing unread (its
first frame, or a reader that has caught up) has its latents decoded ahead of the
others' work of the same tick, so a joining listener waits for no one else's
audio. A stream whose reader falls ``max_ahead`` frames behind sits out ticks
until it reads (memory stays bounded by the model). ``cancel`` takes effect at
the next tick.
"""

from __future__ import annotations

import asyncio
import atexit
import itertools
import queue
import threading
import weakref
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np

from pocketcli.defaults import MAX_TOKENS
from pocketcli.engine.generator import (
    ChunkRun,
    ChunkTrace,
    Frame,
    GenerationSettings,
    silence_frames,
)
from pocketcli.engine.noise import NoiseSource
from pocketcli.normalize.timeline import Pause
from pocketcli.runtimes.base import Runtime, batching, decode_batching
from pocketcli.text import ChunkPlan
from pocketcli.voices.state import VoiceState

# Frames a stream may have made but not yet had read before it sits out (about 2.5 s).
MAX_AHEAD_FRAMES = 32
# Ticks of Mimi work queued (the one being decoded included) before the next tick waits
# (unless a stream is yet to start: it does not wait for the others' audio).
# Where Mimi is slower than the FlowLM (many full-size streams on two cores), running
# ahead only piled frames up until streams sat out by turns, each turn restacking the
# KV caches (measured: 4.3 stacks alive at 8 streams) and queueing a joining stream's
# first frame behind seconds of other streams' audio.
MAX_MIMI_TICKS = 2
# Text tokens whose prefills may share a tick: one full chunk's (a prefill's cost grows
# with its tokens), so several short texts joining at once start in the same tick.
PREFILL_TOKENS_PER_TICK = MAX_TOKENS
# How long the exit of a process waits for a scheduler still running to stop.
EXIT_WAIT_SECONDS = 5.0

_END = object()


class StreamHandle:
    """One stream's frames, in order: iterate (blocking), ``async for``, or ``cancel()``."""

    def __init__(self, scheduler: Scheduler, stream_id: int) -> None:
        self.id = stream_id
        self._scheduler = scheduler
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._cancelled = threading.Event()
        self._done = False

    # -- the reader's side ----------------------------------------------
    def __iter__(self) -> Iterator[Frame]:
        return self

    def __next__(self) -> Frame:
        frame = self._next_or_none()
        if frame is None:
            raise StopIteration
        return frame

    def __aiter__(self) -> StreamHandle:
        return self

    async def __anext__(self) -> Frame:
        frame = await asyncio.get_running_loop().run_in_executor(None, self._next_or_none)
        if frame is None:
            raise StopAsyncIteration
        return frame

    def _next_or_none(self) -> Frame | None:
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
        self._scheduler._frame_read(self.id)
        assert isinstance(item, Frame)
        return item

    def cancel(self) -> None:
        """Stops the stream at the next tick; frames not yet read are dropped."""
        if not self._cancelled.is_set():
            self._cancelled.set()
            self._queue.put(_END)
            self._scheduler._wake()

    close = cancel

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    # -- the scheduler's side -------------------------------------------
    def _put(self, item: object) -> None:
        self._queue.put(item)


@dataclass
class _Stream:
    handle: StreamHandle
    items: Iterator[ChunkPlan | Pause]
    voice: VoiceState | None
    noise: NoiseSource
    settings: GenerationSettings
    on_chunk: Callable[[ChunkTrace], None] | None
    run: ChunkRun | None = None
    chunk_index: int = 0
    unread: int = 0  # frames handed to Mimi or the queue, not yet read
    failed: bool = False
    started: bool = False  # a frame of it (speech or pause) is on its way


# A stream's latents on their way to Mimi, with the chunk that made them.
_Decode = tuple[_Stream, ChunkRun, np.ndarray]


@dataclass
class SchedulerStats:
    """What the scheduler did (for /metrics and benchmarks)."""

    ticks: int = 0
    frames: int = 0
    batch_sizes: Counter[int] = field(default_factory=Counter)  # rows per tick -> ticks
    batched_calls: int = 0  # FlowLM calls that advanced several rows at once
    batched_decodes: int = 0  # Mimi calls that decoded several streams at once


class _MimiThread:
    """The one thread that runs a scheduler's Mimi work, in the order it was handed over.

    Not a ``ThreadPoolExecutor``: that refuses new work once the interpreter begins
    to exit, and the scheduler must still be able to end its streams then.
    """

    def __init__(self) -> None:
        self._jobs: deque[Callable[[], None] | None] = deque()
        self._ready = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="pockettts-mimi", daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[..., None], *args: object, first: bool = False) -> None:
        """Queues ``fn(*args)``; with ``first``, ahead of the work already queued."""
        with self._ready:
            if first:
                self._jobs.appendleft(lambda: fn(*args))
            else:
                self._jobs.append(lambda: fn(*args))
            self._ready.notify()

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
            job()  # never raises: a job reports its errors to its streams (``_decode_job``)


class Scheduler:
    """Advances every submitted stream of one runtime, one frame per tick, in one thread."""

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
        self._batched = batching(runtime) if batched else None
        self._batch = self._batched.start_batch() if self._batched is not None else None
        self._decoder = decode_batching(runtime) if batched else None
        # This tick's Mimi work, handed to the Mimi thread as one piece; ``_waited`` is
        # the latents of streams with nothing unread (a first frame, a reader waiting),
        # handed over ahead of the work already queued.
        self._decodes: list[_Decode] = []
        self._waited: list[_Decode] = []
        self._mimi_ticks = 0  # decode jobs handed to the Mimi thread, not yet done
        self._threaded = threaded_decoder
        self._mimi = _MimiThread() if threaded_decoder else None
        self._cond = threading.Condition()
        self._streams: dict[int, _Stream] = {}
        self._ids = itertools.count()
        self._thread: threading.Thread | None = None
        self._closed = False
        self.stats = SchedulerStats()
        self._latent_dim = runtime.config.flow_lm.latent_dim
        _LIVE.add(self)

    @property
    def batches(self) -> bool:
        """Whether ticks use the runtime's batched calls (else one row at a time)."""
        return self._batched is not None

    @property
    def active_streams(self) -> int:
        with self._cond:
            return len(self._streams)

    def submit(
        self,
        chunks: Iterable[ChunkPlan | Pause],
        voice: VoiceState | None,
        noise: NoiseSource,
        settings: GenerationSettings,
        on_chunk: Callable[[ChunkTrace], None] | None = None,
    ) -> StreamHandle:
        """Starts a stream (it joins at the next tick); read its frames from the handle."""
        with self._cond:
            if self._closed:
                raise RuntimeError("the scheduler is closed")
            sid = next(self._ids)
            handle = StreamHandle(self, sid)
            self._streams[sid] = _Stream(handle, iter(chunks), voice, noise, settings, on_chunk)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._loop, name="pockettts-scheduler", daemon=True
                )
                self._thread.start()
            self._cond.notify_all()
        return handle

    def close(self, timeout: float | None = None) -> None:
        """Cancels every stream and stops the scheduler's threads (waiting at most
        ``timeout`` seconds for each, None: until they stop)."""
        _LIVE.discard(self)
        with self._cond:
            self._closed = True
            streams = list(self._streams.values())
            self._cond.notify_all()
        for s in streams:
            s.handle.cancel()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        if self._mimi is not None:
            self._mimi.stop(timeout)

    # -- bookkeeping ------------------------------------------------------
    def _wake(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def _frame_read(self, sid: int) -> None:
        with self._cond:
            s = self._streams.get(sid)
            if s is not None:
                s.unread -= 1
                if s.unread == self.max_ahead - 1:
                    self._cond.notify_all()

    def _leave(self, s: _Stream, item: object = _END) -> None:
        """Removes a stream; its end (or error) follows the frames already on their way."""
        with self._cond:
            self._streams.pop(s.handle.id, None)
        self._after_decodes(lambda: s.handle._put(item))

    def _after_decodes(self, action: Callable[[], None]) -> None:
        self._submit_decodes()  # a stream's frames before what follows them
        if self._mimi is None:
            action()
        else:
            self._mimi.submit(action)

    # -- the loop ---------------------------------------------------------
    def _loop(self) -> None:
        while True:
            try:
                if not self._turn():
                    return
            except Exception as exc:  # a fault of the loop itself: its streams hear it
                with self._cond:
                    streams = list(self._streams.values())
                for s in streams:
                    self._fail(s, exc)

    def _turn(self) -> bool:
        """One tick (False once the scheduler is closed)."""
        with self._cond:
            while True:
                if self._closed:
                    return False
                for s in [s for s in self._streams.values() if s.handle.cancelled]:
                    self._streams.pop(s.handle.id, None)
                runnable = [s for s in self._streams.values() if s.unread < self.max_ahead]
                # A stream yet to start does not wait for Mimi to catch up: its first
                # frame overtakes the queued work (``_decode``), so the wait would only
                # delay its first audio by the other streams' audio.
                if runnable and (
                    self._mimi_ticks < MAX_MIMI_TICKS or any(not s.started for s in runnable)
                ):
                    break
                self._cond.wait()
        rows = self._rows(runnable)
        starting = bool(rows) and all(s.run is not None and s.run.first for s in rows)
        if rows:
            self._tick(rows)
        # Only first frames this tick (no stream under way): the next tick waits for their
        # audio, as ``generate_frames`` does, so the decode has the cores to itself instead
        # of sharing them with the next FlowLM step.
        self._submit_decodes(wait=starting)
        return True

    def _rows(self, runnable: list[_Stream]) -> list[_Stream]:
        """The streams that make a frame this tick. Chunks start (their text prefills
        run) while their tokens together fit ``PREFILL_TOKENS_PER_TICK``, and at least
        one does: a tick stalls the running streams by about one full chunk's prefill
        at most, and streams that join at once with short texts start together."""
        rows: list[_Stream] = []
        prefill_tokens = 0
        # With no stream under way, a prefill holds no one up: they all start now.
        budget = PREFILL_TOKENS_PER_TICK if any(s.started for s in runnable) else None
        for s in runnable:
            if not self._ready(s):
                continue
            assert s.run is not None
            if s.run.first:
                tokens = s.run.plan.n_tokens
                if budget is not None and prefill_tokens and prefill_tokens + tokens > budget:
                    continue  # its prefill waits for the next tick
                prefill_tokens += tokens
            rows.append(s)
        return rows

    def _ready(self, s: _Stream) -> bool:
        """Moves ``s`` to a chunk that wants a frame (pauses are queued as they come);
        False when it has none this tick (ended, failed)."""
        try:
            while s.run is None or not s.run.wants_frame():
                if s.run is not None:
                    self._decode(s, s.run, s.run.flush())
                    s.run = None
                item = next(s.items, None)
                if item is None:
                    self._leave(s)
                    return False
                if isinstance(item, Pause):
                    config = self.runtime.config.mimi
                    for frame in silence_frames(
                        item.seconds, config.sample_rate, config.samples_per_frame
                    ):
                        self._emit(s, frame)
                    continue
                trace = ChunkTrace(item, [])
                if s.on_chunk is not None:
                    s.on_chunk(trace)
                s.run = ChunkRun(self.runtime, s.chunk_index, item, s.voice, s.settings, trace)
                s.chunk_index += 1
        except Exception as exc:
            self._fail(s, exc)
            return False
        return True

    def _fail(self, s: _Stream, exc: BaseException) -> None:
        s.failed = True
        s.run = None
        self._leave(s, exc)

    def _emit(self, s: _Stream, frame: Frame) -> None:
        s.started = True
        with self._cond:
            s.unread += 1
        self._after_decodes(lambda: s.handle._put(frame))

    def _decode(self, s: _Stream, run: ChunkRun, latents: np.ndarray | None) -> None:
        if latents is None:
            return
        s.started = True
        with self._cond:
            # Nothing unread: nothing of this stream is on its way either, so its
            # latents may overtake the other streams' queued work.
            waited = s.unread == 0
            s.unread += latents.shape[0]
        (self._waited if waited else self._decodes).append((s, run, latents))

    def _submit_decodes(self, wait: bool = False) -> None:
        """Hands this tick's latents to the Mimi thread: those of streams with nothing
        unread as a job ahead of the queued work, the rest as a job behind it. The tick
        counts once (``MAX_MIMI_TICKS``), when its last job is done. With ``wait``,
        returns once that job is done."""
        jobs = [(items, first) for items, first in ((self._waited, True), (self._decodes, False))]
        jobs = [(items, first) for items, first in jobs if items]
        self._waited, self._decodes = [], []
        if not jobs:
            return
        if self._mimi is None:
            for items, _ in jobs:
                self._decode_now(items)
            return
        done = threading.Event() if wait else None
        with self._cond:
            self._mimi_ticks += 1
        for n, (items, first) in enumerate(jobs):
            last = n == len(jobs) - 1
            self._mimi.submit(self._decode_job, items, last, done if last else None, first=first)
        if done is not None:
            done.wait()

    def _decode_job(
        self, items: list[_Decode], ends_tick: bool, done: threading.Event | None
    ) -> None:
        """Decodes ``items``; ``ends_tick``: the tick's last job (``done`` is set then)."""
        try:
            self._decode_now(items)
        except Exception as exc:  # not one call's failure (those fail their own streams)
            self._report(items, exc)
        finally:
            if ends_tick:
                with self._cond:
                    self._mimi_ticks -= 1
                    self._cond.notify_all()
            if done is not None:
                done.set()

    @staticmethod
    def _report(items: list[_Decode], exc: Exception) -> None:
        """Fails the streams of some Mimi work, from the Mimi thread: their readers get
        ``exc``, and reading it cancels the stream (``StreamHandle``)."""
        for s, _, _ in items:
            s.failed = True
            s.handle._put(exc)

    def _decode_now(self, items: list[_Decode]) -> None:
        """Decodes in rounds (a stream's second piece, e.g. the next chunk's first frame,
        after its first), each round in calls of streams with as many latents."""
        rounds: list[dict[int, list[_Decode]]] = []
        seen: Counter[int] = Counter()
        for item in items:
            s = item[0]
            n = seen[s.handle.id]
            seen[s.handle.id] += 1
            if n == len(rounds):
                rounds.append({})
            rounds[n].setdefault(item[2].shape[0], []).append(item)
        for groups in rounds:
            for frames, group in groups.items():
                live = [item for item in group if not (item[0].handle.cancelled or item[0].failed)]
                size = self._decoder.decode_rows(frames) if self._decoder is not None else 1
                for start in range(0, len(live), size):
                    self._decode_call(live[start : start + size])

    def _decode_call(self, part: list[_Decode]) -> None:
        try:
            if len(part) == 1:
                _, run, latents = part[0]
                audio = [self.runtime.decode(run.decoder, latents)]
            else:
                assert self._decoder is not None
                audio = list(
                    self._decoder.decode_batch(
                        [run.decoder for _, run, _ in part], np.stack([lat for *_, lat in part])
                    )
                )
                self.stats.batched_decodes += 1
        except Exception as exc:  # one call failed: every stream in it fails
            self._report(part, exc)
            return
        for (s, run, _), samples in zip(part, audio, strict=True):
            for frame in run.frames(samples):
                s.handle._put(frame)

    def _tick(self, rows: list[_Stream]) -> None:
        runtime, batched = self.runtime, self._batched
        together = batched is not None and len(rows) > 1
        z: dict[int, np.ndarray] = {}
        eos: dict[int, float] = {}
        stepping = [s for s in rows if s.run is not None and not s.run.first]
        try:
            if together and stepping:
                assert batched is not None
                zs, logits = batched.step_batch(
                    self._batch,
                    [s.run.seq for s in stepping],
                    np.stack([s.run.latent for s in stepping]),
                )
                for i, s in enumerate(stepping):
                    z[s.handle.id], eos[s.handle.id] = zs[i], float(logits[i])
                self.stats.batched_calls += len(stepping) > 1
            for s in rows:
                if s.handle.id not in z:
                    assert s.run is not None
                    z[s.handle.id], eos[s.handle.id] = s.run.run_step(runtime)
        except Exception as exc:  # one call failed: every row in it fails
            for s in rows:
                self._fail(s, exc)
            return

        going: list[_Stream] = []
        for s in rows:
            assert s.run is not None
            if s.run.take_output(eos[s.handle.id]):
                going.append(s)
        self.stats.ticks += 1
        self.stats.batch_sizes[len(rows)] += 1
        if not going:
            return
        noise: dict[int, np.ndarray] = {}
        by_steps: dict[int, list[_Stream]] = {}
        for s in going:
            try:  # a stream's own noise source may stop it (a session's cancel does)
                noise[s.handle.id] = s.noise(self._latent_dim)
            except Exception as exc:
                self._fail(s, exc)
                continue
            by_steps.setdefault(s.settings.decode_steps, []).append(s)
        latents: dict[int, np.ndarray] = {}
        for steps, group in by_steps.items():
            try:
                if together:
                    assert batched is not None
                    made = batched.sample_latent_batch(
                        np.stack([z[s.handle.id] for s in group]),
                        np.stack([noise[s.handle.id] for s in group]),
                        steps,
                    )
                    latents.update((s.handle.id, made[i]) for i, s in enumerate(group))
                else:
                    for s in group:
                        latents[s.handle.id] = runtime.sample_latent(
                            z[s.handle.id], noise[s.handle.id], steps
                        )
            except Exception as exc:
                for s in group:
                    self._fail(s, exc)
        for s in going:
            run = s.run
            if run is None or s.handle.id not in latents:
                continue
            try:
                self._decode(s, run, run.take_latent(latents[s.handle.id], eos[s.handle.id]))
                self.stats.frames += 1
            except Exception as exc:
                self._fail(s, exc)


# Schedulers not yet closed. When the process exits, each is closed (its streams
# cancelled, its threads stopped) before the interpreter is torn down, so no thread is
# left inside ONNX Runtime or printing a traceback at exit.
_LIVE: weakref.WeakSet[Scheduler] = weakref.WeakSet()


@atexit.register
def _close_at_exit() -> None:
    for scheduler in list(_LIVE):
        scheduler.close(EXIT_WAIT_SECONDS)
