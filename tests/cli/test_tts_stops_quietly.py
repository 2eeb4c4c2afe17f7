"""Ctrl-C and SIGTERM are how ``pockettts tts`` is stopped (a long text, a batch, ``--play``,
``--follow``), as they are for the servers: exit 130 or 143 and not a line on stderr, and
nothing half-written left (outputs are published atomically). Real signals to a real
console-script subprocess, sent once its output file is begun (waited on, never slept)."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest

from tests.support.cli import SCRIPT, cli_env
from tests.support.waiting import DEADLINE, wait_until_writing
from tests.unit.audio.test_playback import null_device  # noqa: F401 - a fixture

STOPS = [(signal.SIGINT, 130), (signal.SIGTERM, 143)]
LONG = " ".join(f"Sentence number {i} is here to keep the model busy." for i in range(4000))


def _stop(proc: subprocess.Popen, folder: Path, signum: int) -> bytes:
    wait_until_writing(proc, folder)  # loaded and speaking: its handlers are armed
    proc.send_signal(signum)
    try:
        _, err = proc.communicate(timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail(f"still running {DEADLINE:g} s after {signal.Signals(signum).name}")
    return err


def _tts(args: list[str], text: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    with open(text, "rb") as stdin:
        return subprocess.Popen(
            [SCRIPT, "tts", *args, "-q"],
            stdin=stdin,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env or cli_env(),
        )


def _long(folder: Path) -> Path:
    """Far more text than any machine speaks before the signal (read from stdin)."""
    path = folder / "long.txt"
    path.write_text(LONG, encoding="utf-8")
    return path


@pytest.mark.parametrize(("signum", "status"), STOPS, ids=["SIGINT", "SIGTERM"])
def test_a_batch_stops_quietly(pack_dir, tmp_path, signum, status) -> None:
    lines = tmp_path / "lines.txt"
    lines.write_text("".join(f"l{i}|{LONG[:600]}\n" for i in range(20)), encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    args = ["--input-file", str(lines), "--output-dir", str(out), "--model-dir", str(pack_dir)]
    proc = _tts(args, lines)
    err = _stop(proc, out, signum)
    assert (proc.returncode, err) == (status, b"")
    assert not [p for p in out.iterdir() if p.name.endswith(".part")]


@pytest.mark.parametrize(("signum", "status"), STOPS, ids=["SIGINT", "SIGTERM"])
def test_playing_stops_quietly(null_device, pack_dir, tmp_path, signum, status) -> None:  # noqa: F811
    kept = tmp_path / "kept.wav"
    args = ["--play", "-o", str(kept), "--model-dir", str(pack_dir)]
    proc = _tts(args, _long(tmp_path), env=null_device)
    err = _stop(proc, tmp_path, signum)
    assert (proc.returncode, err) == (status, b"")
    assert not kept.exists() and not list(tmp_path.glob(".*.part"))


def test_a_hang_up_still_says_what_stopped_it(pack_dir, tmp_path) -> None:
    # Only the normal stops are quiet: SIGHUP (a terminal gone) keeps its line.
    out = tmp_path / "out.wav"
    proc = _tts(["-o", str(out), "--model-dir", str(pack_dir)], _long(tmp_path))
    err = _stop(proc, tmp_path, signal.SIGHUP)
    assert (proc.returncode, err) == (128 + signal.SIGHUP, b"pockettts: error: hung up (SIGHUP)\n")
