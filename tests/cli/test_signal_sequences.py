"""Any sequence of SIGINT/SIGTERM at any moment: exit 130/143, no line (``tts`` stops
quietly, as the servers do), no traceback, nothing partial. Real console-script
subprocesses. The watchdog bounds the time to stop (its own test makes the cleanup hang);
the others wait on what the process does (its output file begun, its end) with a generous
deadline, never on a guessed sleep."""

from __future__ import annotations

import random
import re
import signal
import subprocess
import sys
import time

import pytest

from tests.support.cli import SCRIPT, cli_env
from tests.support.waiting import DEADLINE, wait_until_writing

# Far more than any machine speaks before the signals come (read from standard input, so
# no argument-length limit applies): the run can only end because of them.
TEXT = " ".join(
    f"Sentence number {i} is here to keep the model busy for a while." for i in range(8000)
)
EXPECTED = {signal.SIGINT: (130, -signal.SIGINT), signal.SIGTERM: (143, -signal.SIGTERM)}


def _start(out, pack_dir, voice_path) -> subprocess.Popen:
    text = out.parent.parent / "text.txt"
    if not text.exists():
        text.write_text(TEXT, encoding="utf-8")
    args = ["tts", "-o", str(out), "--model-dir", str(pack_dir)]
    with open(text, "rb") as stdin:
        return subprocess.Popen(
            [SCRIPT, *args, "--voice-file", str(voice_path), "-q"],
            stdin=stdin,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=cli_env(),
        )


def _handlers_installed(pid: int) -> bool | None:
    """Whether pockettts's handlers are in place, as the kernel sees the process: CPython
    catches only SIGINT by itself, so a caught SIGTERM means ``install_signal_handlers``
    ran (it installs SIGINT first and holds every stop signal blocked until all are in
    place). None where /proc cannot tell (not Linux, or the process already gone)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("SigCgt:"):
                    return bool(int(line.split()[1], 16) >> (signal.SIGTERM - 1) & 1)
    except OSError:
        return None
    return None


def _wait_until_handled(proc: subprocess.Popen) -> None:
    """Until the kernel shows pockettts's handlers installed (where /proc can tell)."""
    end = time.monotonic() + DEADLINE
    while _handlers_installed(proc.pid) is False:
        assert proc.poll() is None, "the run ended before its handlers were installed"
        assert time.monotonic() < end, f"no signal handlers within {DEADLINE:g} s"
        time.sleep(0.005)


def _check_end(proc: subprocess.Popen, first: int, folder, ours: bool | None = None) -> bool:
    """Checks how the run ended; False when the signal came too early to tell (CPython
    was still starting, before pockettts existed): the caller retries later. ``ours``:
    whether the handlers were installed when the first signal was sent (None: unknown).
    Before that, CPython's own start-up decides: its KeyboardInterrupt traceback, or a
    SIGINT it loses while it unwinds, so that a later SIGTERM is the one that counts."""
    try:
        _, err = proc.communicate(timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail(f"still running {DEADLINE:g} s after {signal.Signals(first).name}")
    text = err.decode(errors="replace")
    assert list(folder.iterdir()) == [], "a partial or temporary file was left"
    if ours is False or _inside_python_startup(text):
        return False
    assert proc.returncode in EXPECTED[first], (proc.returncode, text)
    assert "Traceback" not in text and "terminate called" not in text, text
    # Our handler ran (exit 130/143), or the default action killed it before Python set
    # up any handler: either way silent, as Ctrl-C and SIGTERM are tts's normal stop.
    assert text == "", text
    return True


_FRAME = re.compile(
    r'^  File "(?P<file>[^"]+)", line \d+, in (?P<where>.+)\n(?:    (?P<code>.*))?', re.M
)
_FIRST_MODULES = ("pocketcli/__init__.py", "pocketcli/cli/__init__.py", "pocketcli/cli/entry.py")


def _inside_python_startup(stderr: str) -> bool:
    """The signal came before pockettts's handlers existed: while CPython was starting
    (its site import), or on the console script's way to them (the launcher's first lines,
    pocketcli's first imports and interrupts.py's own ``import signal``). What is left
    then is CPython's own KeyboardInterrupt traceback, or its default action."""
    if "init_import_site" in stderr or "Fatal Python error: init_" in stderr:
        return True  # CPython's own initialisation (sys streams, site) was interrupted
    if not stderr.startswith("Traceback") or not stderr.rstrip().endswith("KeyboardInterrupt"):
        return False

    def importing(frame: re.Match) -> bool:
        code = frame["code"] or ""
        return frame["where"] == "<module>" and code.startswith(("import ", "from "))

    frames = list(_FRAME.finditer(stderr))
    if not frames or frames[0]["file"] != SCRIPT:
        return False
    if frames[0]["code"] is not None and not importing(frames[0]):
        return False  # the launcher was past its imports (line 0 shows no code)
    for frame in frames[1:]:
        if "/pocketcli/" not in frame["file"]:
            continue  # the standard library's import machinery
        first = frame["file"].endswith((*_FIRST_MODULES, "pocketcli/interrupts.py"))
        # A SIGINT in install_signal_handlers()'s first lines, before it blocks the stop
        # signals, still meets Python's default handler: that too is start-up. (Between
        # the installs the signals are blocked: test_signal_handlers_install_atomically.)
        installing = (frame["code"] or "").startswith("install_signal_handlers(armed=False") or (
            frame["where"] == "install_signal_handlers"
        )
        if not ((importing(frame) or installing) and first):
            return False
    return True


def test_two_signals_during_synthesis(pack_dir, voice_path, tmp_path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    proc = _start(folder / "out.wav", pack_dir, voice_path)
    wait_until_writing(proc, folder)
    proc.send_signal(signal.SIGINT)
    proc.send_signal(signal.SIGTERM)  # while the first is being handled
    assert _check_end(proc, signal.SIGINT, folder), "pockettts was writing: it must answer"
    assert proc.returncode == 130


@pytest.mark.slow
def test_thirty_random_signal_sequences(pack_dir, voice_path, tmp_path) -> None:
    rng = random.Random(20261201)
    for run in range(30):
        signals = [rng.choice((signal.SIGINT, signal.SIGTERM)) for _ in range(rng.randint(1, 4))]
        gaps = [rng.uniform(0.0, 0.1) for _ in signals]
        early = run % 3 != 0  # while importing and loading the model, else while speaking
        delay = rng.uniform(0.0, 0.2) if early else rng.uniform(0.0, 0.5)
        for attempt in range(20):  # a signal inside CPython's own start-up: try later
            folder = tmp_path / f"run{run}.{attempt}"
            folder.mkdir()
            proc = _start(folder / "out.wav", pack_dir, voice_path)
            if early:  # from the moment pockettts answers signals: its imports, model loading
                _wait_until_handled(proc)
            else:
                wait_until_writing(proc, folder)
            time.sleep(delay)
            assert proc.poll() is None, "the run ended before the first signal"
            ours = _handlers_installed(proc.pid)
            for sig, gap in zip(signals, gaps, strict=True):
                if proc.poll() is not None:
                    break
                proc.send_signal(sig)
                time.sleep(gap)
            if _check_end(proc, signals[0], folder, ours):
                break
            delay += 0.1
        else:
            pytest.fail(f"run {run}: every signal landed in CPython's start-up")


def test_a_cleanup_that_never_ends_is_cut_short_by_the_watchdog() -> None:
    """The bound on the time to stop: however long unwinding takes, the watchdog ends the
    process with the one line (waited for generously, never timed)."""
    code = (
        "import time\n"
        "from pocketcli.interrupts import install_signal_handlers\n"
        "install_signal_handlers()\n"
        "try:\n"
        "    print('ready', flush=True)\n"
        "    time.sleep(60)\n"
        "finally:\n"
        "    while True:\n"
        "        time.sleep(0.01)  # a cleanup stuck forever\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline() == "ready\n"
    proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("the watchdog did not end a process whose cleanup hangs")
    assert proc.returncode == 143 and err == "pockettts: error: terminated\n", err


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
