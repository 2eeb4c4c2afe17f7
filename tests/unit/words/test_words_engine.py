"""Word timings through the real engine (issue 35 items 1-2), on tiny packs.

A pack built with ``timestamp_heads`` gives the heads' attention from its FlowLM graphs in
every precision; a stream that asks gets its words, one that does not gets the same samples
as before; streams that share the scheduler's calls each get their own attention and words,
the same as alone; a pack or config that cannot time words says so in one line.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from pocketcli import PocketTTS, SpeakOptions
from pocketcli.engine.scheduler import Scheduler
from pocketcli.packs.manifest import seal
from pocketcli.words import WordsUnavailable, WordTimer
from pocketcli.words.stream import ScriptWatch, timed
from tests.support.alone import frames_alone
from tests.unit.words.conftest import words_config

TEXT = "Hello there, this is the longest line. It is spoken in several chunks!"
FRAME = 0.08


def _opts(**changes) -> SpeakOptions:
    return SpeakOptions(seed=7, max_tokens=12, **changes)


def _words(tts: PocketTTS, text: str, **changes) -> tuple[list, np.ndarray]:
    frames = list(tts.stream(text, None, _opts(words=True, **changes)))
    return [w for f in frames for w in f.words], np.concatenate([f.audio for f in frames])


@pytest.mark.parametrize("precision", ["fp32", "int8", "int4"])
def test_every_precision_of_a_new_pack_times_words(words_pack, precision) -> None:
    tts = PocketTTS.open(runtime="onnx", model_dir=words_pack, precision=precision)
    assert tts.runtime.words_unavailable_reason is None
    words, audio = _words(tts, TEXT)
    assert len(words) >= 6
    assert len({w.start for w in words}) >= 6  # the attention moved over the text


def test_words_are_in_order_on_frame_starts_within_the_audio(words_tts) -> None:
    words, audio = _words(words_tts, TEXT)
    seconds = audio.size / words_tts.sample_rate
    assert [w.index for w in words] == sorted({w.index for w in words})
    for a, b in zip(words, words[1:], strict=False):
        assert a.end <= b.start + 1e-9
    for w in words:
        assert 0 <= w.start < w.end <= seconds + 1e-9
        assert abs(w.start / FRAME - round(w.start / FRAME)) < 1e-6
    spoken = {w.strip(",.!").casefold() for w in TEXT.split()}
    assert {w.word.casefold() for w in words} <= spoken


def test_a_pause_moves_the_words_after_it(words_tts) -> None:
    frames = list(
        words_tts.stream("Hello there. [pause:1s] Spoken after it.", None, _opts(words=True))
    )
    first = next(i for i, f in enumerate(frames) if f.chunk_index == 1)
    assert sum(f.is_pause for f in frames[:first]) > 0
    resumed = sum(f.audio.size for f in frames[:first]) / words_tts.sample_rate
    words = [w for f in frames for w in f.words]
    spoken = next(w for w in words if w.word == "Spoken")
    assert resumed <= spoken.start < resumed + 0.5
    assert all(w.end <= resumed - 1.0 + 1e-9 for w in words[: words.index(spoken)])


@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_asking_for_words_changes_no_sample(words_pack, precision) -> None:
    tts = PocketTTS.open(runtime="onnx", model_dir=words_pack, precision=precision)
    with_words = tts.synthesize(TEXT, None, _opts(words=True))
    without = tts.synthesize(TEXT, None, _opts())
    assert np.array_equal(with_words, without)


def test_a_stream_that_does_not_ask_fetches_no_attention(words_tts) -> None:
    frames = list(words_tts.stream(TEXT, None, _opts()))
    assert all(f.attention is None and f.words == () for f in frames)


def _job(tts: PocketTTS, text: str, seed: int):
    opts = _opts(words=True).with_(seed=seed)
    return tts._script_for(text, opts), None, tts._noise_for(opts), tts._settings_for(opts)


def _timed(tts: PocketTTS, text: str, frames) -> list:
    watch = ScriptWatch(tts._script_for(text, _opts()), tts._tokenizer, None)
    list(watch)
    timer = WordTimer(watch.units_of, tts.sample_rate)
    return [w for f in timed(iter(frames), timer) for w in f.words]


LINES = (TEXT, "A short line.", "The middle line, [pause:200ms] with a pause in it.")


def test_streams_together_get_their_own_words_as_alone(words_tts) -> None:
    runtime = words_tts.runtime
    alone = [frames_alone(runtime, *_job(words_tts, t, s)) for s, t in enumerate(LINES)]
    scheduler = Scheduler(runtime)
    try:
        handles = [scheduler.submit(*_job(words_tts, t, s)) for s, t in enumerate(LINES)]
        together = [list(h) for h in handles]
        assert scheduler.stats.batched_calls > 0
    finally:
        scheduler.close()
    for text, a, b in zip(LINES, alone, together, strict=True):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            assert (x.attention is None) == (y.attention is None)
            if x.attention is not None:
                np.testing.assert_allclose(x.attention, y.attention, atol=1e-5, rtol=0)
        assert _timed(words_tts, text, a) == _timed(words_tts, text, b)
    assert len({len(_timed(words_tts, t, a)) for t, a in zip(LINES, alone, strict=True)}) == 3


def test_the_committed_pack_says_its_config_has_no_heads(pack_dir) -> None:
    tts = PocketTTS.open(runtime="onnx", model_dir=pack_dir)
    with pytest.raises(WordsUnavailable) as err:
        list(tts.stream("Hello.", None, _opts(words=True)))
    assert "\n" not in str(err.value)
    assert "timestamp_heads" in str(err.value)


def test_a_pack_built_before_word_timings_says_so(pack_dir, tmp_path: Path) -> None:
    """The tiny pack's graphs with a config that lists heads: rebuild it, in one line."""
    old = tmp_path / "pack"
    shutil.copytree(pack_dir, old)
    manifest = json.loads((old / "pack.json").read_text(encoding="utf-8"))
    manifest["config"]["timestamp_heads"] = words_config()["timestamp_heads"]
    (old / "pack.json").write_text(json.dumps(seal(manifest)), encoding="utf-8")
    tts = PocketTTS.open(runtime="onnx", model_dir=old)
    with pytest.raises(WordsUnavailable) as err:
        tts.synthesize("Hello.", None, _opts(words=True))
    assert str(err.value) == (
        f"cannot time words: the pack {old} was built before word timings: rebuild it"
        " (pockettts download --rebuild, or build_pack)"
    )


def test_text_that_nfkc_would_retokenize_is_timed_on_what_was_spoken(words_tts) -> None:
    """ "…" and full-width letters: NFKC changes their tokens; the model attended to the
    text as spoken, so the units are cut from that."""
    text = "Ｈｅｌｌｏ there… the café is ﬁne, isn't it."
    words, _ = _words(words_tts, text, normalize=False)
    assert words and {w.word for w in words} <= {
        "Ｈｅｌｌｏ",
        "there",
        "the",
        "café",
        "is",
        "ﬁne",
        "isn't",
        "it",
    }


def test_a_session_gives_each_texts_words_as_a_stream_would(words_tts) -> None:
    """Greedy (the same audio whatever the noise): each text's words are its stream's,
    later ones shifted by the audio before them (times run from the session's start)."""
    texts = ("Hello there, this is the first text.", "And here comes the second one!")
    opts = _opts(words=True, temperature=0.0)
    session = words_tts.session(None, opts)
    for text in texts:
        session.enqueue(text)
    session.finish()
    frames = list(session)
    assert {f.utterance_index for f in frames} == {0, 1}
    first = [f for f in frames if f.utterance_index == 0]
    offset = sum(f.audio.size for f in first) / words_tts.sample_rate
    timed = 0
    for index, text in enumerate(texts):
        alone, _ = _words(words_tts, text, temperature=0.0)
        got = [w for f in frames if f.utterance_index == index for w in f.words]
        shift = offset if index else 0.0
        assert [(w.word, w.index) for w in got] == [(w.word, w.index) for w in alone]
        assert all(
            abs(a.start - b.start - shift) < 1e-9 and abs(a.end - b.end - shift) < 1e-9
            for a, b in zip(got, alone, strict=True)
        )
        timed += len(alone)
    assert timed >= 4 and offset > 0


def test_a_session_of_a_pack_that_cannot_time_words_says_so(pack_dir) -> None:
    tts = PocketTTS.open(runtime="onnx", model_dir=pack_dir)
    with pytest.raises(WordsUnavailable, match="timestamp_heads"):
        tts.session(None, _opts(words=True))


@pytest.mark.parametrize("speed", [0.5, 2.0])
def test_words_at_a_speed_are_the_same_words_at_their_times_over_the_speed(
    words_tts, speed
) -> None:
    """Issue 36: the words are decided on the model's frames, their times in the audio
    heard; none is lost with frames the stretcher held all of, and all lie within it."""
    plain, _ = _words(words_tts, TEXT)
    words, audio = _words(words_tts, TEXT, speed=speed)
    assert [(w.word, w.index) for w in words] == [(w.word, w.index) for w in plain]
    for fast, slow in zip(words, plain, strict=True):
        assert fast.start == pytest.approx(slow.start / speed, abs=1e-9)
        assert fast.end == pytest.approx(slow.end / speed, abs=1e-9)
    assert words[-1].end <= audio.size / words_tts.sample_rate + 1e-9
    whole = words_tts.synthesize(TEXT, None, _opts(words=True, speed=speed))
    assert [(w.word, w.start, w.end) for w in whole.words] == [
        (w.word, w.start, w.end) for w in words
    ]


@pytest.mark.parametrize("speed", [2.0, 4.0])
def test_a_sessions_words_at_a_speed_are_timed_in_the_audio_heard(words_tts, speed) -> None:
    """At 4x the stretcher holds all of some frames: their words ride on the next."""
    timed_words = {}
    for rate in (1.0, speed):
        session = words_tts.session(None, _opts(words=True, speed=rate))
        session.enqueue(TEXT)
        session.finish()
        frames = [f for f in session if hasattr(f, "words")]
        assert all(len(f.audio) for f in frames)  # a frame held whole by the stretcher is none
        timed_words[rate] = [w for f in frames for w in f.words]
    slow, fast = timed_words[1.0], timed_words[speed]
    assert [w.word for w in fast] == [w.word for w in slow] and fast
    for f, s in zip(fast, slow, strict=True):
        assert f.start == pytest.approx(s.start / speed, abs=1e-9)
