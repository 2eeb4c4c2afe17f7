"""A stream joining running ones: its first frame does not wait for their step.

Within a tick the joining streams run first (text prefill, flow head) and their first
frames go to Mimi at once, so a join's first audio is decoded while the streams under
way take their batched step. Real ONNX Runtime sessions on the committed tiny pack;
one call of the runtime is held at a gate the test opens, so the order is observed,
never timed (each gate gives up after ``GATE_SECONDS``, so a wrong order fails the test
instead of hanging it).
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from pocketcli import PocketTTS
from pocketcli.engine.scheduler import Scheduler
from pocketcli.options import SpeakOptions
from pocketcli.runtimes.base import batching, decode_batching
from tests.support.alone import frames_alone

GATE_SECONDS = 60.0
STEPS = ("step", "step_batch")
DECODES = ("decode", "decode_batch")


@pytest.fixture(scope="module")
def fp32(pack_dir) -> PocketTTS:
    return PocketTTS.open(runtime="onnx", model_dir=pack_dir)


class _Gated:
    """The runtime, with the calls named ``held`` waiting at ``gate`` while it is closed
    (once ``armed``); ``entered`` is set when one of them is first called armed, and
    ``opened`` says whether the gate opened before ``GATE_SECONDS`` passed."""

    def __init__(self, runtime, held: tuple[str, ...]) -> None:
        self._runtime = runtime
        self.config = runtime.config
        self.held = held
        self.armed = False
        self.gate = threading.Event()
        self.entered = threading.Event()
        self.opened: bool | None = None

    def __getattr__(self, name: str):
        attr = getattr(self._runtime, name)
        if name not in self.held:
            return attr

        def gated(*args, **kwargs):
            if self.armed and not self.entered.is_set():
                self.entered.set()
                self.opened = self.gate.wait(GATE_SECONDS)
            return attr(*args, **kwargs)

        return gated


def _job(tts: PocketTTS, voice, seed: int, text: str):
    opts = SpeakOptions(seed=seed, max_tokens=12)
    return (tts._script_for(text, opts), voice, tts._noise_for(opts), tts._settings_for(opts))


def _audio(frames) -> np.ndarray:
    return np.concatenate([f.audio for f in frames])


def _join_beside_a_running_stream(tts: PocketTTS, runtime: _Gated, voice):
    """Stream A under way (its reader one frame behind), then B joins: the scheduler
    sees both at once, so one tick has A's step and B's prefill. Returns the scheduler,
    A's reader and frames read so far, and B's handle."""
    scheduler = Scheduler(runtime, max_ahead=2)
    a = scheduler.submit(*_job(tts, voice, 1, "The one under way speaks a longer line."))
    reader = iter(a)
    read = [next(reader)]
    assert scheduler.wait_idle(GATE_SECONDS), "stream A never sat out for its reader"
    runtime.armed = True
    with scheduler._cond:  # B joins and A may run again: both in the next tick
        b = scheduler.submit(*_job(tts, voice, 2, "Joining now."))
        read.append(next(reader))
    return scheduler, reader, read, b


def test_a_joining_streams_first_frame_comes_while_the_running_step_is_held(
    fp32, fixture_dir
) -> None:
    """The running stream's step waits at the gate until B's first frame was read: B's
    prefill, flow head and first decode happen before that step (a tick that stepped
    the running rows first would hold B's first audio behind them)."""
    runtime = _Gated(fp32.runtime, STEPS)
    assert batching(runtime) is not None
    voice = fp32.voices.load(fixture_dir / "voice.safetensors")
    scheduler, reader, read, b = _join_beside_a_running_stream(fp32, runtime, voice)
    try:
        first_b = next(iter(b))
        assert runtime.entered.wait(GATE_SECONDS), "the running stream's step never came"
        runtime.gate.set()
        frames_b = [first_b, *b]
        read.extend(reader)
    finally:
        runtime.gate.set()
        scheduler.close()
    assert runtime.opened, "B's first frame came only after the running stream's step"
    # Each stream's audio is its audio alone (nothing of one reached the other).
    alone_a = frames_alone(
        fp32.runtime, *_job(fp32, voice, 1, "The one under way speaks a longer line.")
    )
    alone_b = frames_alone(fp32.runtime, *_job(fp32, voice, 2, "Joining now."))
    assert np.array_equal(_audio(read), _audio(alone_a))
    assert np.array_equal(_audio(frames_b), _audio(alone_b))


def test_the_running_step_goes_on_while_the_joiners_first_frame_is_decoded(
    fp32, fixture_dir
) -> None:
    """B's first decode waits at the gate until the running stream's step has begun, and
    that step waits until B's decode has begun: the tick hands B's first frame to Mimi
    and goes on (it waits for first frames' audio only when no stream is under way)."""
    runtime = _Gated(fp32.runtime, DECODES)
    assert decode_batching(runtime) is not None
    voice = fp32.voices.load(fixture_dir / "voice.safetensors")
    stepped = threading.Event()
    beside: list[bool] = []
    step_batch = runtime._runtime.step_batch

    def noting_step_batch(*args, **kwargs):
        if runtime.armed and not stepped.is_set():  # the join tick's step of A
            stepped.set()
            beside.append(runtime.entered.wait(GATE_SECONDS))  # B's decode under way
            runtime.gate.set()
        return step_batch(*args, **kwargs)

    runtime.step_batch = noting_step_batch  # type: ignore[attr-defined]
    scheduler, reader, read, b = _join_beside_a_running_stream(fp32, runtime, voice)
    try:
        frames_b = list(b)
        read.extend(reader)
    finally:
        runtime.gate.set()
        scheduler.close()
    assert beside == [True], "the running stream's step came before B's first decode began"
    assert runtime.opened, "the tick waited for B's audio before stepping A"
    alone_b = frames_alone(fp32.runtime, *_job(fp32, voice, 2, "Joining now."))
    assert np.array_equal(_audio(frames_b), _audio(alone_b))


class _PrefillAfterDecode:
    """The runtime, whose third text prefill waits until a Mimi decode has begun (or
    ``GATE_SECONDS`` passed: ``decoded_first`` False)."""

    def __init__(self, runtime) -> None:
        self._runtime = runtime
        self.config = runtime.config
        self.prefills = 0
        self.decoding = threading.Event()
        self.decoded_first: bool | None = None

    def __getattr__(self, name: str):
        attr = getattr(self._runtime, name)
        if name in DECODES:

            def decode(*args, **kwargs):
                self.decoding.set()
                return attr(*args, **kwargs)

            return decode
        if name != "prefill_then_step":
            return attr

        def prefill_then_step(*args, **kwargs):
            self.prefills += 1
            if self.prefills == 3:
                self.decoded_first = self.decoding.wait(GATE_SECONDS)
            return attr(*args, **kwargs)

        return prefill_then_step


def test_joins_first_frames_are_decoded_while_later_joins_prefill(fp32, fixture_dir) -> None:
    """Three streams join an idle scheduler in one tick: the first two's first frames go
    to Mimi before the third's prefill runs (not all of them after every prefill), and
    each stream's audio is its own."""
    runtime = _PrefillAfterDecode(fp32.runtime)
    voice = fp32.voices.load(fixture_dir / "voice.safetensors")
    texts = ["First to join.", "Second to join.", "Third to join."]
    scheduler = Scheduler(runtime)
    try:
        with scheduler._cond:  # the scheduler sees them all at once
            handles = [scheduler.submit(*_job(fp32, voice, i, t)) for i, t in enumerate(texts)]
        got = [list(h) for h in handles]
    finally:
        scheduler.close()
    assert runtime.decoded_first, "no first frame was decoded until every join's prefill ran"
    for i, text in enumerate(texts):
        assert np.array_equal(
            _audio(got[i]), _audio(frames_alone(fp32.runtime, *_job(fp32, voice, i, text)))
        )
