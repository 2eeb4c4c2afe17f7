"""Any sequence of SIGINT/SIGTERM at any moment: exit 130/143 within 2 s, one line, no
traceback, nothing partial (issue 12, item 4). Real console-script subprocesses."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

import pytest

from tests.test_cli_tts import SCRIPT

TEXT = " ".join(
    f"Sentence number {i} is here to keep the model busy for a while." for i in range(400)
)
EXPECTED = {signal.SIGINT: (130, -signal.SIGINT), signal.SIGTERM: (143, -signal.SIGTERM)}


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "POCKETTTS_DEBUG"}


def _start(out, pack_dir, voice_path) -> subprocess.Popen:
    args = ["tts", TEXT, "-o", str(out), "--model-dir", str(pack_dir)]
    return subprocess.Popen(
        [SCRIPT, *args, "--voice-file", str(voice_path), "-q"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=_env(),
    )


def _check_end(proc: subprocess.Popen, first: int, sent_at: float, folder) -> None:
    try:
        _, err = proc.communicate(timeout=max(0.05, sent_at + 2.0 - time.monotonic()))
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail(f"still running 2 s after {signal.Signals(first).name}")
    text = err.decode(errors="replace")
    assert list(folder.iterdir()) == [], "a partial or temporary file was left"
    if _inside_python_startup(text):
        return
    assert proc.returncode in EXPECTED[first], (proc.returncode, text)
    assert "Traceback" not in text and "terminate called" not in text, text
    if proc.returncode > 0:  # our handler ran: exactly one line
        assert text.count("\n") == 1 and text.startswith("pockettts: error: "), text
    else:  # killed by the default action before Python set up any handler: silent
        assert text == "", text


def _inside_python_startup(stderr: str) -> bool:
    """The signal came while CPython was still starting, before pocketcli's first line
    ran (its site import, or the console-script launcher's own import line)."""
    if "init_import_site" in stderr:
        return True
    launcher = "from pocketcli.cli.entry import run" in stderr
    return launcher and "pocketcli/interrupts.py" not in stderr and "cli/main.py" not in stderr


def test_two_signals_during_synthesis(pack_dir, voice_path, tmp_path) -> None:
    proc = _start(tmp_path / "out.wav", pack_dir, voice_path)
    time.sleep(1.5)  # well into synthesis
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    _check_end(proc, signal.SIGINT, sent, tmp_path)
    assert proc.returncode == 130


@pytest.mark.slow
def test_thirty_random_signal_sequences(pack_dir, voice_path, tmp_path) -> None:
    rng = random.Random(20261201)
    for run in range(30):
        folder = tmp_path / f"run{run}"
        folder.mkdir()
        proc = _start(folder / "out.wav", pack_dir, voice_path)
        time.sleep(rng.uniform(0.0, 0.2) if run % 2 else rng.uniform(0.2, 1.5))
        signals = [rng.choice((signal.SIGINT, signal.SIGTERM)) for _ in range(rng.randint(1, 4))]
        assert proc.poll() is None, "the run ended before the first signal: make TEXT longer"
        sent = time.monotonic()
        for sig in signals:
            if proc.poll() is not None:
                break
            proc.send_signal(sig)
            time.sleep(rng.uniform(0.0, 0.1))
        _check_end(proc, signals[0], sent, folder)


def test_stop_raised_where_python_swallows_it_still_ends_quietly() -> None:
    # A signal whose exception lands in a weakref callback (or a __del__) is "ignored" by
    # Python with a printed traceback; the process must still end at once with one line.
    code = (
        "import os, signal, sys, time, weakref\n"
        "from pocketcli.interrupts import install_signal_handlers\n"
        "install_signal_handlers()\n"
        "class A: pass\n"
        "def hit(_):\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    time.sleep(0.05)\n"
        "a = A(); r = weakref.ref(a, hit); del a\n"
        "time.sleep(5)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 143, proc.stderr
    assert proc.stderr == "pockettts: error: terminated\n"


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_signal_while_the_console_script_imports(signum, code) -> None:
    # The launcher imports pocketcli.cli.entry (which installs the handlers) before run()
    # can unwind anything: a signal in between must end the process with one line.
    script = (
        "import os, signal, time\n"
        "import pocketcli.cli.entry\n"
        f"os.kill(os.getpid(), {int(signum)})\n"
        "time.sleep(5)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == code, proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("pockettts: error: ")
