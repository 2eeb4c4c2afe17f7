"""Values a careless or hostile user types: each refused with words that say what is
wrong, before any model work. Real console-script subprocesses on the tiny pack."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support.cli import SCRIPT, run


@pytest.mark.parametrize("value", ["nan", "-nan", "NaN"])
def test_a_nan_temperature_says_it_is_not_a_number_in_range(pack_dir, tmp_path, value):
    r = run("tts", "Hi.", "-o", tmp_path / "x.wav", "--temperature", value, "--model-dir", pack_dir)
    assert r.returncode == 2, r.stderr
    assert b"is not a number: give one from 0 to 10" in r.stderr, r.stderr
    assert b"less than or equal" not in r.stderr


def _speak(pack_dir: Path, voice_path: Path, out: str | Path) -> list[str | Path]:
    return ["tts", "Hi.", "-o", out, "--model-dir", pack_dir, "--voice-file", voice_path]


def test_a_missing_output_folder_is_not_created(pack_dir, voice_path, tmp_path) -> None:
    # README: -o and --save-voice need their folder; a typo must not create a tree.
    out = tmp_path / "typo" / "deeper" / "x.wav"
    r = run(*_speak(pack_dir, voice_path, out))
    assert r.returncode == 1, r.stderr
    assert f"cannot write output file {out}: its folder does not exist".encode() in r.stderr
    assert not (tmp_path / "typo").exists()


@pytest.mark.skipif(not Path("/proc/version").is_file(), reason="needs Linux's /proc")
def test_a_virtual_file_system_is_named_as_the_cause(pack_dir, voice_path) -> None:
    r = run(*_speak(pack_dir, voice_path, "/proc/version"))
    assert r.returncode == 1, r.stderr
    assert b"/proc takes no new files" in r.stderr and b"folder does not" not in r.stderr


def test_a_deleted_working_folder_names_the_path(pack_dir, voice_path, tmp_path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    args = [str(a) for a in _speak(pack_dir, voice_path, "e.wav")]
    r = subprocess.run(
        ["bash", "-c", 'cd "$1" && rmdir "$1" && shift && exec "$@"', "-", gone, SCRIPT, *args],
        capture_output=True,
        timeout=120,
    )
    assert r.returncode == 1, r.stderr
    assert b"cannot write output file e.wav: the current folder no longer exists" in r.stderr
    assert r.stderr.count(b"\n") == 1


def test_a_deeply_nested_safetensors_header_is_one_line(pack_dir, tmp_path) -> None:
    import struct

    body = b'{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    voice = tmp_path / "deep.safetensors"
    voice.write_bytes(struct.pack("<Q", len(body)) + body)
    r = run("tts", "Hi.", "-o", tmp_path / "x.wav", "--voice-file", voice, "--model-dir", pack_dir)
    assert r.returncode == 1, r.stderr
    assert b"nested too deeply" in r.stderr and b"RecursionError" not in r.stderr, r.stderr
    assert r.stderr.count(b"\n") == 1
