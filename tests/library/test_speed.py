"""``SpeakOptions.speed`` through the real engine (tiny pack, issue 36): 1.0 is today's
samples, other speeds the same stream time-stretched, streamed == whole == session, and
many streams at once give each what it gives alone."""

from __future__ import annotations

import numpy as np
import pytest

from pocketcli.api import PocketTTS
from pocketcli.audio.postprocess import peak_normalize
from pocketcli.options import SpeakOptions

TEXT = "The quick brown fox jumps over the lazy dog, and then it rests."


@pytest.fixture(scope="module")
def tts(pack_dir):
    return PocketTTS.open(model_dir=pack_dir)


def test_speed_one_is_todays_samples(tts) -> None:
    today = tts.synthesize(TEXT, options=SpeakOptions(seed=3))
    np.testing.assert_array_equal(
        tts.synthesize(TEXT, options=SpeakOptions(seed=3, speed=1.0)), today
    )
    raw = SpeakOptions(seed=3, output_chain=False)
    frames = [f.audio for f in tts.stream(TEXT, options=raw.with_(speed=1.0))]
    assert [len(a) for a in frames] == [1920] * len(frames)


@pytest.mark.parametrize("speed", [0.5, 1.3, 2.0])
def test_duration_scales_and_stream_session_and_whole_agree(tts, speed) -> None:
    base = tts.synthesize(TEXT, options=SpeakOptions(seed=3, output_chain=False))
    opts = SpeakOptions(seed=3, speed=speed)
    whole = tts.synthesize(TEXT, options=opts)
    assert len(whole) == round(len(base) / speed)
    streamed = np.concatenate([f.audio for f in tts.stream(TEXT, options=opts)])
    np.testing.assert_array_equal(peak_normalize(streamed), whole)
    with tts.session(options=opts) as session:
        session.enqueue(TEXT)
        session.finish()
        spoken = np.concatenate([f.audio for f in session])
    np.testing.assert_array_equal(peak_normalize(spoken), whole)


def test_the_stretch_runs_before_the_output_chain(tts) -> None:
    """The model's raw frames stretched, then filtered: not the filtered frames stretched."""
    from pocketcli.audio.postprocess import OutputChain
    from pocketcli.audio.stretch import Stretcher

    raw = [f.audio for f in tts.stream(TEXT, options=SpeakOptions(seed=4, output_chain=False))]
    s, chain = Stretcher(1.3), OutputChain(tts.sample_rate)
    want = np.concatenate([chain.process(s.process(a)) for a in raw] + [chain.process(s.flush())])
    got = np.concatenate(
        [f.audio for f in tts.stream(TEXT, options=SpeakOptions(seed=4, speed=1.3))]
    )
    np.testing.assert_array_equal(got, want)


def test_many_streams_at_once_give_each_what_it_gives_alone(tts) -> None:
    texts = [TEXT, "A second, shorter line.", TEXT, "Four."]
    opts = [SpeakOptions(seed=i, speed=s) for i, s in enumerate([1.3, 0.5, 2.0, 1.0])]
    together = tts.synthesize_many(texts, options=opts, max_streams=4)
    for text, o, got in zip(texts, opts, together, strict=True):
        np.testing.assert_array_equal(got, tts.synthesize(text, options=o))


def test_first_audio_comes_with_the_first_frame(tts) -> None:
    frames = tts.stream(TEXT, options=SpeakOptions(seed=3, speed=2.0))
    try:
        first = next(frames)
    finally:
        frames.close()
    assert first.chunk_index == 0 and first.frame_index == 0 and len(first.audio) > 0


def test_each_text_of_a_session_is_stretched_on_its_own(tts) -> None:
    """A session's texts each end with their own stretched tail: each utterance is
    1/speed of its length at 1.0, none carries the last one's held samples."""
    texts = ["A first sentence to speak.", "And then a second one."]

    def lengths(speed: float) -> list[int]:
        with tts.session(options=SpeakOptions(seed=8, speed=speed, output_chain=False)) as s:
            for text in texts:
                s.enqueue(text)
            s.finish()
            got = [0, 0]
            for frame in s:
                got[frame.utterance_index] += len(frame.audio)
        return got

    for base, fast in zip(lengths(1.0), lengths(1.3), strict=True):
        assert fast == round(base / 1.3)
