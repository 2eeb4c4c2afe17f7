"""The speaking-rate stretcher on real speech (issue 36): duration scaled by 1/speed,
pitch and timbre kept, frame-by-frame the same as whole, each instance its own state.

The clips are three LibriSpeech utterances (tests/fixtures/speech, CC BY 4.0: see its
SOURCES.md); the measures are tests/support/speech_measures.py's, checked here first.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from pocketcli.audio.resample import resample_poly
from pocketcli.audio.stretch import Stretcher
from pocketcli.errors import OptionsError
from pocketcli.options import SpeakOptions
from tests.support.speech_measures import f0_shift, median_f0, relative_shift, spectral_centroid

RATE = 24_000
FRAME = 1920
CLIPS = Path(__file__).resolve().parents[2] / "fixtures" / "speech"
SPEEDS = (0.5, 0.8, 1.3, 2.0)


@pytest.fixture(scope="module")
def speech() -> list[np.ndarray]:
    clips = []
    for path in sorted(CLIPS.glob("*.wav")):
        audio, rate = sf.read(path, dtype="float32")
        clips.append(resample_poly(audio, RATE, rate))
    assert len(clips) == 3
    return clips


def by_frame(x: np.ndarray, speed: float) -> np.ndarray:
    s = Stretcher(speed)
    return np.concatenate(
        [*(s.process(x[i : i + FRAME]) for i in range(0, len(x), FRAME)), s.flush()]
    )


def test_the_pitch_tracker_reads_known_pitches() -> None:
    t = np.arange(RATE) / RATE
    for f0 in (90.0, 150.0, 230.0):
        tone = sum(np.sin(2 * np.pi * k * f0 * t) / k for k in range(1, 6))  # rich, like a voice
        assert median_f0(tone, RATE) == pytest.approx(f0, rel=0.005)
        # a real 30% shift is measured as one, not folded away as an octave error
        up = sum(np.sin(2 * np.pi * k * f0 * 1.3 * t) / k for k in range(1, 6))
        assert f0_shift(tone, up, RATE) == pytest.approx(0.3, abs=0.01)
    assert spectral_centroid(np.sin(2 * np.pi * 1000 * t), RATE) == pytest.approx(1000, rel=0.02)


@pytest.mark.parametrize("speed", SPEEDS)
def test_speech_keeps_its_pitch_and_timbre_and_takes_one_over_speed(speech, speed) -> None:
    out = [by_frame(x, speed) for x in speech]
    for x, y in zip(speech, out, strict=True):
        assert abs(len(y) * speed / len(x) - 1) < 0.02
    before, after = np.concatenate(speech), np.concatenate(out)
    assert f0_shift(before, after, RATE) < 0.03
    assert relative_shift(spectral_centroid(before, RATE), spectral_centroid(after, RATE)) < 0.05


def test_frame_by_frame_is_the_whole_and_instances_share_nothing(speech) -> None:
    x = speech[0]
    whole = Stretcher(1.3)
    want = np.concatenate([whole.process(x), whole.flush()])
    a, b = Stretcher(1.3), Stretcher(1.3)
    got_a, got_b = [], []
    for i in range(0, len(x), FRAME):  # interleaved: two streams at once
        got_a.append(a.process(x[i : i + FRAME]))
        got_b.append(b.process(x[::-1][i : i + FRAME]))
    np.testing.assert_array_equal(np.concatenate([*got_a, a.flush()]), want)
    assert len(np.concatenate([*got_b, b.flush()])) == len(want)


@pytest.mark.parametrize("speed", [0.25, 0.5, 1.3, 2.0, 3.0])
def test_first_audio_comes_with_the_first_frame_up_to_three(speech, speed) -> None:
    assert len(Stretcher(speed).process(speech[0][:FRAME])) > 0


def test_first_audio_at_four_comes_with_the_second_frame(speech) -> None:
    s = Stretcher(4.0)
    s.process(speech[0][:FRAME])
    assert len(s.process(speech[0][FRAME : 2 * FRAME])) > 0


@pytest.mark.parametrize("bad", [0.2, 4.5, 0, -1, float("nan"), float("inf"), True, "fast"])
def test_a_speed_out_of_range_names_the_field(bad) -> None:
    with pytest.raises(OptionsError, match="speed") as caught:
        SpeakOptions(speed=bad)
    assert "0.25" in str(caught.value) and "4" in str(caught.value)
    assert SpeakOptions(speed=0.25).speed == 0.25 and SpeakOptions(speed=4).speed == 4
