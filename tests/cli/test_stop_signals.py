"""Every signal whose default action ends a process (HUP, USR1, USR2, ALRM, as TERM and INT) ends
``tts -o FILE`` with 128 + its number, one line and no temporary file; SIGPIPE is ignored
(a broken pipe is a write error where it happens), so the run finishes its file."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest
import soundfile as sf

from tests.support.cli import SCRIPT, cli_env

TEXT = " ".join(f"Sentence {i} keeps the model busy for a little while." for i in range(300))
WORDS = {
    signal.SIGHUP: "hung up (SIGHUP)",
    signal.SIGUSR1: "stopped by SIGUSR1",
    signal.SIGUSR2: "stopped by SIGUSR2",
    signal.SIGALRM: "stopped by SIGALRM",
}  # SIGINT and SIGTERM: tests/cli/test_signal_sequences.py


def _start(folder: Path, pack_dir: Path, voice_path: Path, text: str) -> subprocess.Popen:
    env = cli_env()
    args = ["tts", text, "-o", str(folder / "out.wav"), "--model-dir", str(pack_dir)]
    return subprocess.Popen(
        [SCRIPT, *args, "--voice-file", str(voice_path), "-q"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )


def _wait_for_part(proc: subprocess.Popen, folder: Path) -> None:
    """Until the run writes its temporary file (synthesis under way), 60 s at most."""
    deadline = time.monotonic() + 60
    while not list(folder.glob(".out.wav.*.part")):
        assert proc.poll() is None, "the run ended before it wrote: make TEXT longer"
        assert time.monotonic() < deadline, "no temporary file within 60 s"
        time.sleep(0.02)


@pytest.mark.parametrize("signum", list(WORDS), ids=lambda s: signal.Signals(s).name)
def test_a_stop_signal_leaves_one_line_and_no_file(pack_dir, voice_path, tmp_path, signum):
    proc = _start(tmp_path, pack_dir, voice_path, TEXT)
    _wait_for_part(proc, tmp_path)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum, (proc.returncode, err)
    assert err.decode() == f"pockettts: error: {WORDS[signum]}\n"
    assert list(tmp_path.iterdir()) == []


def test_sigpipe_does_not_stop_a_run_that_writes_a_file(pack_dir, voice_path, tmp_path):
    proc = _start(tmp_path, pack_dir, voice_path, TEXT[:400])
    _wait_for_part(proc, tmp_path)
    proc.send_signal(signal.SIGPIPE)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert sf.info(str(tmp_path / "out.wav")).frames > 0
    assert [p.name for p in tmp_path.iterdir()] == ["out.wav"]
