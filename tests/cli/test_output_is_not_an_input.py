"""An output of `tts` that names one of the run's inputs, or another of its outputs, is a
usage error before anything is read or written: found by scripts/hostile_sweep.py, where
`--clone-voice rec.wav -o rec.wav` replaced the recording with the speech made from it,
`--metrics` onto the --voice-file replaced the voice with JSON, and `-o a.wav --metrics
a.wav` left JSON where the audio was (all exit 0)."""

from __future__ import annotations

import shutil

import pytest

from tests.support import cli
from tests.support.paths import FIXTURES

PROMPT = FIXTURES / "tiny" / "clone_prompt_24k.wav"
VOICE = FIXTURES / "tiny" / "voice.safetensors"

CASES = {
    "-o onto --clone-voice": (["--clone-voice", "rec.wav", "-o", "rec.wav"], "rec.wav"),
    "-o onto it through ./": (["--clone-voice", "rec.wav", "-o", "./sub/../rec.wav"], "rec.wav"),
    "--metrics onto --voice-file": (
        ["--voice-file", "v.safetensors", "-o", "a.wav", "--metrics", "v.safetensors"],
        "v.safetensors",
    ),
    "--metrics onto -o": (
        ["--voice-file", "v.safetensors", "-o", "a.wav", "--metrics", "a.wav"],
        None,
    ),
    "--metrics onto a new -o spelled sub/../": (
        ["--voice-file", "v.safetensors", "-o", "new.wav", "--metrics", "sub/../new.wav"],
        None,
    ),
    "--captions onto -o": (
        ["--voice-file", "v.safetensors", "-o", "a.vtt", "--format", "wav", "--captions", "a.vtt"],
        None,
    ),
    "--words onto --voice-file": (
        ["--voice-file", "v.safetensors", "-o", "a.wav", "--words", "v.safetensors"],
        "v.safetensors",
    ),
    "-o onto --voice-file through a link": (
        ["--voice-file", "v.safetensors", "-o", "link.wav", "--format", "wav"],
        "link.wav",
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_an_output_that_is_an_input_is_refused_and_nothing_changes(pack_dir, tmp_path, name):
    args, kept = CASES[name]
    shutil.copy(PROMPT, tmp_path / "rec.wav")
    shutil.copy(VOICE, tmp_path / "v.safetensors")
    (tmp_path / "sub").mkdir()
    (tmp_path / "link.wav").symlink_to("v.safetensors")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    r = cli.run("tts", "Hello.", *args, "--model-dir", pack_dir, "-q", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    first = r.stderr.decode().splitlines()[0]
    assert first.startswith("pockettts: error: ") and "is also the" in first, first
    after = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    assert after == before  # nothing written, nothing replaced
    if kept:  # the path as the user typed it
        assert kept in first


def test_devices_and_stdout_may_be_named_twice(pack_dir, tmp_path) -> None:
    r = cli.run(
        *("tts", "Hello.", "--voice-file", VOICE, "--model-dir", pack_dir, "-q"),
        *("-o", "/dev/null", "--metrics", "/dev/null"),
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
