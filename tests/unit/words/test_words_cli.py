"""``pockettts tts TEXT -o a.wav --words a.json --captions a.vtt|a.srt`` (issue 35 item 3):
the real console script on a tiny pack that times words; captions read back by the
``srt`` and ``webvtt-py`` libraries (real parsers of each format)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from pocketcli import SpeakOptions
from tests.support.cli import run

srt = pytest.importorskip("srt")
webvtt = pytest.importorskip("webvtt")

TEXT = "Hello there, this is the longest line. It is spoken in several chunks!"


def _tts(pack: Path, tmp_path: Path, *extra: str):
    return run("tts", TEXT, "--model-dir", pack, "--seed", "3", "-o", tmp_path / "a.wav", *extra)


def test_words_and_both_caption_formats_match_the_library(words_pack, words_tts, tmp_path) -> None:
    done = _tts(
        words_pack,
        tmp_path,
        "--words",
        str(tmp_path / "a.json"),
        "--captions",
        str(tmp_path / "a.srt"),
    )
    assert done.returncode == 0, done.stderr
    vtt = _tts(words_pack, tmp_path, "--captions", str(tmp_path / "a.vtt"))
    assert vtt.returncode == 0, vtt.stderr
    audio, rate = sf.read(tmp_path / "a.wav", dtype="float32")
    expected = words_tts.synthesize(TEXT, None, SpeakOptions(seed=3, words=True))
    assert np.abs(audio - expected).max() < 1e-4  # the same audio as without --words
    listed = json.loads((tmp_path / "a.json").read_text(encoding="utf-8"))
    assert listed == [
        {"word": w.word, "start": round(w.start, 3), "end": round(w.end, 3)} for w in expected.words
    ]
    assert len(listed) >= 6
    subs = list(srt.parse((tmp_path / "a.srt").read_text(encoding="utf-8")))
    cues = list(webvtt.read(str(tmp_path / "a.vtt")))
    assert [s.content for s in subs] == [c.text for c in cues]
    assert " ".join(s.content for s in subs) == " ".join(w["word"] for w in listed)
    assert subs[0].start.total_seconds() == listed[0]["start"]
    assert subs[-1].end.total_seconds() == listed[-1]["end"]
    assert all(len(s.content.split()) <= 7 for s in subs) and len(subs) >= len(listed) / 7
    for sub, cue in zip(subs, cues, strict=True):  # the same times in both formats
        assert srt.timedelta_to_srt_timestamp(sub.start).replace(",", ".") == cue.start
        assert srt.timedelta_to_srt_timestamp(sub.end).replace(",", ".") == cue.end


def test_audio_on_stdout_with_words_in_a_file(words_pack, tmp_path) -> None:
    """``-o - --words a.json --captions a.srt``: stdout is exactly the audio of the run
    without them (same seed), the files hold the words a file run writes."""
    said = ("tts", TEXT, "--model-dir", words_pack, "--seed", "3", "-q", "-o", "-")
    plain = run(*said, cwd=tmp_path)
    assert plain.returncode == 0 and plain.stdout[:4] == b"RIFF", plain.stderr
    both = run(*said, "--words", "a.json", "--captions", "a.srt", cwd=tmp_path)
    assert both.returncode == 0, both.stderr
    assert both.stdout == plain.stdout  # nothing on stdout but the audio, byte for byte
    filed = _tts(words_pack, tmp_path, "--words", str(tmp_path / "b.json"), "-q")
    assert filed.returncode == 0, filed.stderr
    listed = json.loads((tmp_path / "a.json").read_text(encoding="utf-8"))
    assert len(listed) >= 6 and listed == json.loads((tmp_path / "b.json").read_text("utf-8"))
    subs = list(srt.parse((tmp_path / "a.srt").read_text(encoding="utf-8")))
    assert " ".join(s.content for s in subs) == " ".join(w["word"] for w in listed)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "a.srt", "a.wav", "b.json"]


def test_words_beside_audio_on_stdout_is_a_usage_error(words_pack, tmp_path) -> None:
    done = run("tts", TEXT, "--model-dir", words_pack, "-o", "-", "--words", cwd=tmp_path)
    assert done.returncode == 2 and b"name their files" in done.stderr, done.stderr
    assert done.stdout == b"" and list(tmp_path.iterdir()) == []


def test_captions_of_another_kind_are_a_usage_error(words_pack, tmp_path) -> None:
    done = _tts(words_pack, tmp_path, "--captions", str(tmp_path / "a.txt"))
    assert done.returncode == 2
    assert b".srt or .vtt" in done.stderr and done.stderr.count(b"\n") <= 3
    assert not (tmp_path / "a.wav").exists()


def test_a_pack_that_cannot_time_words_says_so_and_writes_nothing(pack_dir, tmp_path) -> None:
    done = _tts(pack_dir, tmp_path, "--words", str(tmp_path / "a.json"))
    assert done.returncode == 1
    assert (
        done.stderr.decode()
        .strip()
        .splitlines()[-1]
        .endswith(
            "cannot time words: the model's config has no timestamp_heads"
            " (no published head list for it)"
        )
    )
    assert not (tmp_path / "a.wav").exists() and not (tmp_path / "a.json").exists()
