"""The model flags and the voice choice, as the CLI's user sees them (real subprocess runs
on the tiny pack): one bundle of flags, the library's errors said with those flags, the
default voice that is really spoken."""

from __future__ import annotations

import json

import pytest

from tests.support.cli import run


@pytest.fixture
def english_pack(pack_built_for):
    return pack_built_for("english")


def test_a_pack_with_its_own_language_is_accepted(english_pack, voice_path, tmp_path) -> None:
    out = tmp_path / "x.wav"
    r = run("tts", "Hi.", "--model-dir", str(english_pack), "--language", "English",
            "--voice-file", str(voice_path), "-o", str(out), "-q")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert out.stat().st_size > 44


def test_a_pack_with_another_language_is_a_usage_error_naming_flags(english_pack) -> None:
    r = run("tts", "Hi.", "--model-dir", str(english_pack), "--language", "spanish")
    assert r.returncode == 2
    first = r.stderr.decode().splitlines()[0]
    assert "--model-dir already names the model" in first and "english" in first
    assert first.endswith("drop --language")


def test_voices_marks_the_voice_really_spoken_as_default() -> None:
    r = run("voices", "--language", "spanish", "--json")
    assert r.returncode == 0, r.stderr
    defaults = [v["name"] for v in json.loads(r.stdout)["voices"] if v["default"]]
    assert defaults == ["lola"]  # what `tts --language spanish` speaks with, not alba
    table = run("voices", "--language", "spanish").stdout.decode().splitlines()
    marked = [line.split()[0] for line in table if "default" in line]
    assert marked == ["lola"]


def test_speaking_without_any_voice_says_so(pack_dir, tmp_path) -> None:
    r = run("tts", "Hi.", "--model-dir", str(pack_dir), "-o", str(tmp_path / "x.wav"))
    assert r.returncode == 0, r.stderr
    assert b"no built-in voice: speaking without a voice prompt" in r.stderr
    quiet = run("tts", "Hi.", "--model-dir", str(pack_dir), "-o", str(tmp_path / "y.wav"), "-q")
    assert quiet.returncode == 0 and quiet.stderr == b""
