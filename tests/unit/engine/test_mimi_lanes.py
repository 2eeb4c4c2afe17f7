"""Mimi work on two lanes (issue 34): streams spread over two Mimi threads, each stream's
frames still in order and its bytes its own.

One lane is made to lag the other (each of its decodes waits until the other lane has
finished one more decode than it has): any of a stream's work that went to the wrong
lane, its end included, would then overtake the work before it. Real ONNX Runtime
sessions on the committed tiny pack; the lag waits on events with one deadline per
test, never on a guessed sleep (a lane that never moves fails the test instead of
hanging it).
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from pocketcli import PocketTTS
from pocketcli.cores import available_cores
from pocketcli.engine.scheduler import Scheduler
from pocketcli.options import SpeakOptions
from tests.support.alone import frames_alone

DEADLINE_SECONDS = 30.0
SHORT = "A short line."
LONG = "A longer line that keeps its lane busy for a good many frames after the other."

pytestmark = pytest.mark.skipif(available_cores() < 2, reason="two Mimi lanes need two cores")


@pytest.fixture(scope="module")
def fp32(pack_dir) -> PocketTTS:
    return PocketTTS.open(runtime="onnx", model_dir=pack_dir)


class _Lagging:
    """The runtime, whose decodes on the lane ``lagging`` each wait until the other lane
    has finished one more decode than this one has (or the test's deadline passed:
    ``late``). ``lanes`` are the Mimi threads' names seen decoding."""

    def __init__(self, runtime, lagging: int) -> None:
        self._runtime = runtime
        self.config = runtime.config
        self.lagging = f"pockettts-mimi-{lagging}"
        self.done: dict[str, int] = {}
        self.moved = threading.Condition()
        self.deadline = time.monotonic() + DEADLINE_SECONDS
        self.late = False
        self.lanes: set[str] = set()

    def __getattr__(self, name: str):
        attr = getattr(self._runtime, name)
        if name not in ("decode", "decode_batch"):
            return attr

        def lagged(*args, **kwargs):
            me = threading.current_thread().name
            self.lanes.add(me)
            with self.moved:
                if me == self.lagging:
                    mine = self.done.get(me, 0)
                    ahead = lambda: sum(  # noqa: E731
                        n for lane, n in self.done.items() if lane != me
                    )
                    left = self.deadline - time.monotonic()
                    if not self.moved.wait_for(lambda: ahead() > mine, max(0.0, left)):
                        self.late = True
            try:
                return attr(*args, **kwargs)
            finally:
                with self.moved:
                    self.done[me] = self.done.get(me, 0) + 1
                    self.moved.notify_all()

        return lagged


def _job(tts: PocketTTS, voice, seed: int, text: str):
    opts = SpeakOptions(seed=seed, max_tokens=30, eos_threshold=1e9)
    return (tts._script_for(text, opts), voice, tts._noise_for(opts), tts._settings_for(opts))


def _audio(frames) -> np.ndarray:
    return np.concatenate([f.audio for f in frames])


@pytest.mark.parametrize("lagging", [0, 1])
def test_a_lagging_lane_keeps_each_streams_frames_in_order_and_its_own(
    fp32, fixture_dir, lagging
) -> None:
    """The short stream's lane lags the long one's: its frames (and its end) still come
    in order and are its audio alone, and the long stream's lane never waits for it."""
    voice = fp32.voices.load(fixture_dir / "voice.safetensors")
    runtime = _Lagging(fp32.runtime, lagging)
    texts = [SHORT, LONG] if lagging == 0 else [LONG, SHORT]  # lanes go in turn
    scheduler = Scheduler(runtime)
    got: list[list] = [[], []]
    try:
        # Both join in one tick (a stream on the lagging lane alone in the first tick
        # would wait for the other lane, whose stream could not join until it was heard).
        with scheduler._cond:
            handles = [scheduler.submit(*_job(fp32, voice, i + 1, t)) for i, t in enumerate(texts)]
        readers = [threading.Thread(target=got[i].extend, args=(h,)) for i, h in enumerate(handles)]
        for reader in readers:
            reader.start()
        for reader in readers:
            reader.join(DEADLINE_SECONDS)
        assert not any(reader.is_alive() for reader in readers), "a stream never ended"
    finally:
        scheduler.close()
    assert runtime.lanes == {"pockettts-mimi-0", "pockettts-mimi-1"}
    assert not runtime.late, "a lane waited for the other (the lagging one never caught up)"
    for i, text in enumerate(texts):
        indexes = [f.frame_index for f in got[i]]
        assert indexes == sorted(indexes), indexes
        alone = frames_alone(fp32.runtime, *_job(fp32, voice, i + 1, text))
        assert len(got[i]) == len(alone) > 4
        assert np.array_equal(_audio(got[i]), _audio(alone))
