"""Standard output whose reader went away, or that is full, on every command that writes it.

A reader gone (``| head``, ``| true``) ends the run quietly with 141, as README
promises for ``-o -`` (click's own handling gave a silent 1 for ``voices`` and
``normalize``); a full device (``>/dev/full``) is one line naming standard
output and the cause, exit 1. Real console-script subprocesses.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from tests.support.cli import SCRIPT, run

BIG = "Hello world. " * 25_000  # 325 KB: more than a pipe holds, so a write meets the close


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("POCKETTTS_DEBUG", "PYTHONUNBUFFERED")}
    return {**env, **extra}


def _reader_gone(args: list[str | Path], stdin: str = "", read: int = 0, **env: str):
    """Runs the CLI with stdout a pipe whose reader takes ``read`` bytes and leaves."""
    with tempfile.TemporaryFile() as text:
        text.write(stdin.encode())
        text.seek(0)
        proc = subprocess.Popen(
            [SCRIPT, *map(str, args)],
            stdin=text,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_env(**env),
        )
    assert proc.stdout is not None and proc.stderr is not None
    try:
        if read:
            assert proc.stdout.read(read)
        proc.stdout.close()
        err = proc.stderr.read()
        proc.wait(timeout=120)
    finally:
        proc.kill()
    return proc.returncode, err.decode()


def _to_full(args: list[str | Path]) -> subprocess.CompletedProcess:
    with open("/dev/full", "wb") as full:
        return run(*args, stdout=full, text=True, env=_env())


def test_voices_and_normalize_end_quietly_with_141() -> None:
    assert _reader_gone(["voices"]) == (141, "")  # was a silent 1 (click's handling)
    # A reader that took a little and left: the rest of the write meets the close (under
    # python -u the raw write landed in part and the run said 0).
    assert _reader_gone(["normalize"], stdin=BIG, read=1, PYTHONUNBUFFERED="1") == (141, "")


def test_speech_to_stdout_ends_quietly_with_141(pack_dir: Path, voice_path: Path) -> None:
    model = ["--model-dir", pack_dir, "--voice-file", voice_path]
    assert _reader_gone(["tts", "Gone.", "-o", "-", *model]) == (141, "")


def test_a_full_stdout_is_one_line_naming_it(pack_dir: Path, voice_path: Path) -> None:
    model = ["--model-dir", pack_dir, "--voice-file", voice_path]
    for args in (["voices"], ["tts", "Full.", "-o", "-", *model]):
        r = _to_full(args)
        assert r.returncode == 1, (args, r.stderr)
        assert r.stderr == "pockettts: error: cannot write standard output: the disk is full\n"
