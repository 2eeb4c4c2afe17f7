"""``tts --clone-voice a.wav --save-voice v.bin``: the voice spoken is the voice saved, so a
later ``--voice-file v.bin`` run says the same audio, and the cut is one warning line even
with -q (real console script, tiny pack)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import soundfile as sf

from tests.support.cli import run
from tests.support.paths import DATA

# 14.2 s: longer than the 125 frames (10 s) a FluidAudio .bin holds.
LONG = DATA / "speech" / "librispeech"
LONG = LONG / "librispeech_test_clean_6930-75918-0001.wav"


def _tts(pack: Path, out: Path, *voice: str | Path) -> subprocess.CompletedProcess:
    args = ["tts", "Hello there.", "-o", out, "--model-dir", pack, "--seed", "3", *voice]
    return run(*args)


def test_a_cut_bin_voice_is_the_voice_spoken(pack_dir, tmp_path) -> None:
    saved = tmp_path / "v.bin"
    # -q hides the summary, not the warning: one clean line, no Python warning and source line.
    args = ("--clone-voice", LONG, "--save-voice", saved, "-q")
    first = _tts(pack_dir, tmp_path / "a.wav", *args)
    assert first.returncode == 0, first.stderr
    lines = first.stderr.decode().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"pockettts: warning: {saved}: FluidAudio .bin voices hold")
    assert "kept the first 125 of" in lines[0] and ".safetensors to keep all" in lines[0]
    assert saved.stat().st_size == 125 * 64 * 4
    again = _tts(pack_dir, tmp_path / "b.wav", "--voice-file", saved)
    assert again.returncode == 0, again.stderr
    a, rate_a = sf.read(tmp_path / "a.wav", dtype="float32")
    b, rate_b = sf.read(tmp_path / "b.wav", dtype="float32")
    assert rate_a == rate_b and a.size > 0 and np.abs(a).max() > 0
    np.testing.assert_array_equal(a, b)


def test_a_whole_safetensors_voice_is_the_voice_spoken(pack_dir, tmp_path) -> None:
    saved = tmp_path / "v.safetensors"
    first = _tts(pack_dir, tmp_path / "a.wav", "--clone-voice", LONG, "--save-voice", saved)
    assert first.returncode == 0, first.stderr
    assert b"kept the first" not in first.stderr
    again = _tts(pack_dir, tmp_path / "b.wav", "--voice-file", saved)
    assert again.returncode == 0, again.stderr
    a, _ = sf.read(tmp_path / "a.wav", dtype="float32")
    b, _ = sf.read(tmp_path / "b.wav", dtype="float32")
    assert a.size > 0
    np.testing.assert_array_equal(a, b)
