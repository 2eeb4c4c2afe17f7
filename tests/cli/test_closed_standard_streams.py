"""Closed or full stdout/stderr: a success stays a success (0), a usage error stays 2,
and nothing prints a traceback. Real console-script subprocesses under bash redirections."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import soundfile as sf

from tests.support.cli import run


def shell(redirect: str, *args: str | Path, stderr=subprocess.PIPE) -> subprocess.CompletedProcess:
    """Runs the console script with ``redirect`` (e.g. ``>&-``) applied by bash."""
    return run(*args, shell=redirect, stderr=stderr)


def _speak(pack_dir: Path, voice_path: Path, out: Path) -> list[str | Path]:
    return ["tts", "Closed.", "-o", out, "--model-dir", pack_dir, "--voice-file", voice_path]


@pytest.mark.parametrize("redirect", [">&-", "2>&-", "2>/dev/full", ">&- 2>&-", "<&- >&-"])
def test_a_success_stays_a_success(pack_dir, voice_path, tmp_path, redirect) -> None:
    out = tmp_path / "out.wav"
    r = shell(redirect, *_speak(pack_dir, voice_path, out))
    assert r.returncode == 0, r.stderr
    assert b"Traceback" not in r.stderr and b"Exception ignored" not in r.stderr, r.stderr
    assert sf.info(str(out)).frames > 0
    assert not list(tmp_path.glob(".*.part"))


@pytest.mark.parametrize("redirect", ["2>&-", "2>/dev/full", ">&-"])
def test_a_usage_error_stays_a_usage_error(pack_dir, redirect) -> None:
    r = shell(redirect, "tts", "hi", "--no-such-flag", "--model-dir", pack_dir)
    assert r.returncode == 2, r.stderr


@pytest.fixture(scope="module")
def words_pack(tmp_path_factory) -> Path:
    from tests.support.wordspack import build_words_pack

    return build_words_pack(tmp_path_factory.mktemp("closed_stdout_words_pack"))


@pytest.mark.parametrize(
    ("flags", "what"),
    [
        ((), "output file"),
        (("--metrics", "-"), "metrics file"),
        (("--words", "-"), "words"),
        (("--captions", "-"), "captions"),
    ],
)
def test_anything_to_a_closed_stdout_is_one_line(
    pack_dir, words_pack, voice_path, tmp_path, flags, what
) -> None:
    # -o -, --metrics -, --words - and --captions - (on a pack that times words: they
    # would have gone nowhere, quietly): refused before any work, nothing written elsewhere
    out = Path("-") if not flags else tmp_path / "out.wav"
    pack = words_pack if flags[:1] in (("--words",), ("--captions",)) else pack_dir
    r = shell(">&-", *_speak(pack, voice_path, out), *flags)
    assert r.returncode == 1, r.stderr
    expected = f"pockettts: error: cannot write {what} '-': standard output is closed\n"
    assert r.stderr == expected.encode()
    assert list(tmp_path.iterdir()) == []


def test_a_closed_stdout_is_never_reused_by_a_file_the_run_opens(pack_dir, voice_path, tmp_path):
    # With descriptor 1 free, the first file opened would become "stdout".
    out, metrics = tmp_path / "out.wav", tmp_path / "m.json"
    args = [*_speak(pack_dir, voice_path, out), "--metrics", metrics]
    r = shell(">&-", *args)
    assert r.returncode == 0, r.stderr
    assert sf.info(str(out)).frames > 0 and metrics.read_text().startswith("{")


def test_a_wav_on_a_stdout_that_is_a_file_gets_its_sizes(pack_dir, voice_path, tmp_path) -> None:
    import struct

    out = tmp_path / "out.wav"
    r = shell(f"> {out}", *_speak(pack_dir, voice_path, Path("-")), "--seed", "1")
    assert r.returncode == 0, r.stderr
    data = out.read_bytes()
    riff, size = struct.unpack("<I", data[4:8])[0], struct.unpack("<I", data[40:44])[0]
    assert (riff, size) == (len(data) - 8, len(data) - 44)
    # In append mode a patch would land at the end: the sizes stay "unknown", the file whole.
    appended = tmp_path / "appended.wav"
    appended.write_bytes(b"")
    r = shell(f">> {appended}", *_speak(pack_dir, voice_path, Path("-")), "--seed", "1")
    assert r.returncode == 0, r.stderr
    again = appended.read_bytes()
    assert len(again) == len(data) and again[44:] == data[44:]
