"""Back-pressure and cancellation in the one engine (issue 31 item 4; issue 33's scheduler
survivors), on the committed tiny pack with real ONNX Runtime sessions.

What is measured is the scheduler's own count of frames made and not yet read
(``StreamHandle.ahead``), frames made (``stats.frames``) and FlowLM steps, read once
the scheduler is idle (``Scheduler.wait_idle``: nothing can make a frame), never RSS.
"""

from __future__ import annotations

import gc
import threading
import time

import numpy as np
import pytest

from pocketcli import PocketTTS
from pocketcli.engine.chunk import DECODE_BATCH, ChunkTrace, GenerationSettings
from pocketcli.engine.noise import GaussianNoise
from pocketcli.engine.scheduler import MAX_AHEAD_FRAMES, MAX_MIMI_TICKS, Scheduler
from pocketcli.errors import PocketTTSError
from pocketcli.options import SpeakOptions
from pocketcli.session import MAX_QUEUED_TEXTS, SessionFull
from tests.support.alone import frames_alone

FLOOD = "Hi. " + "[pause:10s] " * 330 + "Bye."
WAIT = 120  # seconds: a deadline, not a guess (each wait ends on its event)
LONG = "A stream long enough to run for a good while, spoken with no end of speech."


@pytest.fixture(scope="module")
def tts(pack_dir) -> PocketTTS:
    return PocketTTS.open(runtime="onnx", model_dir=pack_dir)


@pytest.fixture(scope="module")
def voice(tts, voice_path):
    return tts.voices.load(voice_path)


def _job(tts: PocketTTS, text: str, seed: int = 1, **fields):
    opts = SpeakOptions(seed=seed, max_tokens=50, **fields)
    settings = GenerationSettings(
        eos_threshold=fields.get("eos_threshold", tts._config.default_eos_threshold),
        decode_steps=opts.decode_steps,
    )
    return tts._script_for(text, opts), GaussianNoise(0.7, seed), settings


def _idle(scheduler: Scheduler) -> None:
    assert scheduler.wait_idle(WAIT), "the scheduler never came to rest"


def _stalled(scheduler: Scheduler) -> None:
    """Waits until the FlowLM waits for a Mimi that is held (``MAX_MIMI_TICKS`` behind)."""
    deadline = time.monotonic() + WAIT
    while not (scheduler._waiting.wait(0.05) and scheduler._mimi.ticks == MAX_MIMI_TICKS):
        assert time.monotonic() < deadline, "the FlowLM never stopped for Mimi"


# -- pauses count against max_ahead like speech -------------------------------------
def test_a_pause_flood_unread_stops_at_max_ahead(tts, voice) -> None:
    frames = tts.stream(FLOOD, voice, SpeakOptions(seed=1, output_chain=False))
    first = next(frames)  # under way; then nobody reads
    try:
        scheduler = tts._scheduler
        _idle(scheduler)
        handles = list(scheduler._rows.values())
        assert len(handles) == 1
        assert handles[0].handle.ahead == MAX_AHEAD_FRAMES  # exactly: no frame beyond
    finally:
        frames.close()
    assert first.audio.size == tts._samples_per_frame


def test_a_pause_flood_read_slowly_stays_within_max_ahead(pack_dir, voice_path) -> None:
    tts = PocketTTS.open(runtime="onnx", model_dir=pack_dir)
    scheduler = Scheduler(tts.runtime, max_ahead=8)
    chunks, noise, settings = _job(tts, FLOOD)
    handle = scheduler.submit(chunks, tts.voices.load(voice_path), noise, settings)
    try:
        seen = []
        for _ in range(60):  # a reader that takes a frame, then lets the engine rest
            next(handle)
            _idle(scheduler)
            seen.append(handle.ahead)
        assert max(seen) == 8 and seen[-1] == 8, seen  # silence made as it is read
    finally:
        assert handle.cancel(wait=True, timeout=WAIT)
        scheduler.close()


def test_a_session_enqueued_but_unread_stops(tts, voice) -> None:
    session = tts.session(voice, SpeakOptions(seed=1))
    try:
        session.enqueue(FLOOD)
        _idle(tts._scheduler)
        assert session._handle.ahead == MAX_AHEAD_FRAMES
        for _ in range(MAX_QUEUED_TEXTS - 1):
            session.enqueue("More.")
        with pytest.raises(SessionFull, match=f"{MAX_QUEUED_TEXTS} texts waiting"):
            session.enqueue("One too many.")
    finally:
        assert session.cancel(timeout=WAIT), "the session's stream never left"
    assert tts._scheduler.active_streams == 0


def test_dropped_sessions_leave_no_stream_and_no_thread(tts, voice) -> None:
    assert tts.session(voice).cancel(
        timeout=WAIT
    )  # the model's scheduler and Mimi thread exist now
    baseline = threading.active_count()
    sessions = [tts.session(voice, SpeakOptions(seed=i)) for i in range(200)]
    for session in sessions:
        session.enqueue("Hello there.")
    assert tts._scheduler.active_streams == 200
    del sessions, session
    gc.collect()
    deadline = time.monotonic() + WAIT
    while tts._scheduler.active_streams or threading.active_count() > baseline:
        assert time.monotonic() < deadline, (tts._scheduler.active_streams, baseline)
        tts._scheduler.wait_idle(0.05)
    assert threading.active_count() == baseline


# -- cancellation: one flag, read at the next tick ------------------------------------
class _Steps:
    """The runtime, with its FlowLM calls counted."""

    def __init__(self, runtime) -> None:
        self._runtime = runtime
        self.config = runtime.config
        self.steps = 0

    def __getattr__(self, name: str):
        attr = getattr(self._runtime, name)
        if name not in ("prefill_then_step", "step", "step_batch"):
            return attr

        def counted(*args, **kwargs):
            self.steps += 1
            return attr(*args, **kwargs)

        return counted


def test_after_a_cancel_no_frame_is_made_and_none_is_read(tts, voice) -> None:
    counted = _Steps(tts.runtime)
    scheduler = Scheduler(counted, max_ahead=6)
    chunks, noise, settings = _job(tts, LONG, eos_threshold=1e9)
    try:
        handle = scheduler.submit(chunks, voice, noise, settings)
        next(handle)
        _idle(scheduler)  # six frames made and waiting for the reader
        assert handle.ahead == 6
        steps = counted.steps
        assert handle.cancel(wait=True, timeout=WAIT), "the stream never left"
        assert list(handle) == []  # the frames made before the cancel are dropped
        _idle(scheduler)
        assert counted.steps == steps and scheduler.active_streams == 0
    finally:
        scheduler.close()


# -- the Mimi queue: FlowLM runs at most MAX_MIMI_TICKS ticks ahead -----------------
class _HeldMimi:
    """The runtime, whose Mimi calls after the first wait until ``go`` is set (then fail,
    with ``broken``); writes down the decoder of each call (by the order they were made)."""

    def __init__(self, runtime, broken: bool = False) -> None:
        self._runtime = runtime
        self.config = runtime.config
        self.go = threading.Event()
        self.broken = broken
        self.decoders: list[object] = []
        self.calls: list[int] = []

    def __getattr__(self, name: str):
        return getattr(self._runtime, name)

    def start_decoder(self):
        self.decoders.append(self._runtime.start_decoder())
        return self.decoders[-1]

    def decode(self, decoder, latents):
        self.calls.append(next(i for i, d in enumerate(self.decoders) if d is decoder))
        if len(self.calls) > 1:
            assert self.go.wait(WAIT), "the test never let Mimi run"
            if self.broken:
                raise RuntimeError("Mimi failed for this stream")
        return self._runtime.decode(decoder, latents)


def test_the_flowlm_runs_at_most_max_mimi_ticks_ahead_of_mimi(tts, voice) -> None:
    held = _HeldMimi(tts.runtime)
    scheduler = Scheduler(held, batched=False)
    chunks, noise, settings = _job(tts, LONG, eos_threshold=1e9)
    try:
        handle = scheduler.submit(chunks, voice, noise, settings)
        _stalled(scheduler)  # Mimi holds the second piece: the FlowLM stops
        # The first frame (decoded alone), then a pair per tick of Mimi work.
        assert scheduler.stats.frames == 1 + DECODE_BATCH * MAX_MIMI_TICKS
        held.go.set()
        assert len(list(handle)) > scheduler.stats.frames - 1
    finally:
        held.go.set()
        scheduler.close()


def test_each_tick_of_mimi_work_is_counted_once(tts, voice) -> None:
    """A read stream's latents overtake an unread one's in the same ticks (two jobs a
    tick): once all is decoded, no tick of Mimi work is left counted, or miscounted."""
    scheduler = Scheduler(tts.runtime, max_ahead=12)
    try:
        jobs = [_job(tts, LONG, 1, eos_threshold=1e9), _job(tts, LONG, 2, eos_threshold=1e9)]
        with scheduler._cond:  # both join in one tick: their pieces share ticks (and
            # go to two Mimi lanes: two jobs a tick, each tick counted once all the same)
            read, unread = (scheduler.submit(c, voice, n, s) for c, n, s in jobs)
        frames = len(list(read))  # the other sits at max_ahead meanwhile
        _idle(scheduler)
        assert scheduler._mimi.ticks == 0
        assert unread.ahead == 12 and frames > 12
        assert unread.cancel(wait=True, timeout=WAIT)
    finally:
        scheduler.close()


def test_a_stream_failed_by_mimi_has_no_more_latents_decoded(tts, voice) -> None:
    """Its second piece fails while the third waits in Mimi's queue: the third is not
    decoded, and the stream leaves the ticks whether its reader has heard or not."""
    broken = _HeldMimi(tts.runtime, broken=True)
    scheduler = Scheduler(broken, batched=False)
    chunks, noise, settings = _job(tts, LONG, eos_threshold=1e9)
    try:
        handle = scheduler.submit(chunks, voice, noise, settings)
        _stalled(scheduler)  # Mimi holds the second piece, the third waits behind it
        assert scheduler.stats.frames == 1 + DECODE_BATCH * MAX_MIMI_TICKS
        broken.go.set()
        deadline = time.monotonic() + WAIT
        while scheduler.active_streams or scheduler._mimi.ticks:
            assert time.monotonic() < deadline, "the failed stream still takes ticks"
            scheduler.wait_idle(0.05)
        assert next(handle).frame_index == 0  # the frame decoded before the failure
        with pytest.raises(RuntimeError, match="Mimi failed"):
            next(handle)
    finally:
        broken.go.set()
        scheduler.close()
    assert broken.calls == [0, 0]  # the failed piece, and nothing of the stream after it


# -- rows of one tick -----------------------------------------------------------------
class _Calls:
    """The runtime, with the rows of each batched FlowLM step written down."""

    def __init__(self, runtime) -> None:
        self._runtime = runtime
        self.config = runtime.config
        self.batch_rows: list[int] = []

    def __getattr__(self, name: str):
        attr = getattr(self._runtime, name)
        if name != "step_batch":
            return attr

        def logged(batch, seqs, latents):
            self.batch_rows.append(len(seqs))
            return attr(batch, seqs, latents)

        return logged


def test_ticks_count_their_rows_and_their_batched_calls(tts, voice) -> None:
    """A stream joins one under way (a tick of one step and one prefill), another ends
    while one goes on: every step is counted in its tick's rows, and only FlowLM calls
    of several rows are batched calls."""
    calls = _Calls(tts.runtime)
    scheduler = Scheduler(calls)
    traces: list[ChunkTrace] = []
    try:
        chunks, noise, settings = _job(tts, LONG, 1)
        a = scheduler.submit(chunks, voice, noise, settings, traces.append)
        next(a)
        # B ends on EOS with no frames after it: its last step's frame is not kept.
        chunks, noise, settings = _job(tts, "Short.", 2, eos_threshold=-1e9, frames_after_eos=0)
        b = scheduler.submit(chunks, None, noise, settings, traces.append)
        list(b)
        list(a)
    finally:
        scheduler.close()
    stats = scheduler.stats
    steps = sum(len(t.eos_logits) for t in traces)
    assert steps > stats.frames and any(t.finished_on_eos for t in traces)
    assert sum(rows * ticks for rows, ticks in stats.batch_sizes.items()) == steps
    assert 1 in calls.batch_rows and any(n > 1 for n in calls.batch_rows), calls.batch_rows
    assert stats.batched_calls == sum(n > 1 for n in calls.batch_rows)


def test_rows_with_their_own_decode_steps_share_a_tick(tts, voice) -> None:
    jobs = [_job(tts, LONG, 1, decode_steps=1), _job(tts, "Another line here.", 2, decode_steps=3)]
    alone = [frames_alone(tts.runtime, c, voice, n, s) for c, n, s in jobs]
    jobs = [_job(tts, LONG, 1, decode_steps=1), _job(tts, "Another line here.", 2, decode_steps=3)]
    scheduler = Scheduler(tts.runtime)
    try:
        handles = [scheduler.submit(c, voice, n, s) for c, n, s in jobs]
        together = [list(h) for h in handles]
        assert scheduler.stats.batch_sizes[2] > 0
    finally:
        scheduler.close()
    for a, t in zip(alone, together, strict=True):
        assert np.array_equal(
            np.concatenate([f.audio for f in a]), np.concatenate([f.audio for f in t])
        )


class _StepDuringDecode:
    """The runtime, whose Mimi call for the second chunk's first frame (the joining
    stream's) waits until the scheduler goes on: a FlowLM step after that frame's, or
    the loop waiting for Mimi to catch up (``MAX_MIMI_TICKS``), for 10 s at most.
    ``went_on`` says whether it did (False: the tick waited for this audio)."""

    def __init__(self, runtime) -> None:
        self._runtime = runtime
        self.config = runtime.config
        self.scheduler: Scheduler | None = None
        self.decoders: list[object] = []
        self.steps = 0
        self.steps_at_join: int | None = None
        self.went_on: bool | None = None

    def __getattr__(self, name: str):
        attr = getattr(self._runtime, name)
        if name not in ("step", "step_batch"):
            return attr

        def step(*args, **kwargs):
            self.steps += 1
            return attr(*args, **kwargs)

        return step

    def prefill_then_step(self, *args):
        if len(self.decoders) == 2:
            self.steps_at_join = self.steps
        return self._runtime.prefill_then_step(*args)

    def start_decoder(self):
        self.decoders.append(self._runtime.start_decoder())
        return self.decoders[-1]

    def decode(self, decoder, latents):
        if decoder is self.decoders[-1] and len(self.decoders) == 2 and self.went_on is None:
            assert self.scheduler is not None and self.steps_at_join is not None
            deadline = time.monotonic() + 10
            while not (self.steps > self.steps_at_join or self.scheduler._waiting.is_set()):
                if time.monotonic() > deadline:
                    break
                self.scheduler._waiting.wait(0.005)
            self.went_on = time.monotonic() <= deadline
        return self._runtime.decode(decoder, latents)


def test_a_joining_stream_does_not_hold_the_running_ones_for_its_audio(tts, voice) -> None:
    """Only a tick of first frames alone waits for their audio; a stream joining one
    under way has its first frame decoded while the next tick's FlowLM runs."""
    runtime = _StepDuringDecode(tts.runtime)
    scheduler = runtime.scheduler = Scheduler(runtime)
    try:
        chunks, noise, settings = _job(tts, LONG, 1, eos_threshold=1e9)
        a = scheduler.submit(chunks, voice, noise, settings)
        next(a)
        reader = threading.Thread(target=list, args=(a,))  # A stays under way
        reader.start()
        chunks, noise, settings = _job(tts, "Then B.", 2)
        b = scheduler.submit(chunks, voice, noise, settings)
        assert next(b).frame_index == 0
        a.cancel()
        list(b)
        reader.join(WAIT)
    finally:
        scheduler.close()
    assert runtime.went_on is True


# -- synthesize_many's arguments ------------------------------------------------------
@pytest.mark.parametrize(
    ("texts", "kwargs", "field"),
    [(["ok", None], {}, "texts"), (["ok"], {"max_streams": 0}, "max_streams")],
)
def test_synthesize_many_names_a_bad_argument(tts, texts, kwargs, field) -> None:
    with pytest.raises(PocketTTSError) as caught:
        tts.synthesize_many(texts, **kwargs)
    assert caught.value.field == field and field in str(caught.value)
