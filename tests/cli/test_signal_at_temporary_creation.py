"""A stop signal the moment ``atomic_path`` creates its temporary file, in a process with
other threads (as every synthesis has: ONNX Runtime's pools, the Mimi thread).

Blocking the signals in the main thread does not hold them there: the kernel hands a
process-directed signal to another thread, and Python then runs the handler in the main
thread at its next bytecode, wherever that is. A temporary file made but not yet
registered for removal was left behind (seen once, ``tts -o`` interrupted under load).
Here the signal is sent from inside the very ``os.open`` that creates the file, so its
handler runs between creation and whatever comes after, every time.
"""

from __future__ import annotations

import subprocess
import sys

from tests.support.cli import cli_env

SCRIPT = r"""
import os, signal, sys, threading, time
from pathlib import Path

from pocketcli.interrupts import hard_exit, install_signal_handlers

install_signal_handlers()
import pocketcli.atomic as atomic

threading.Thread(target=time.sleep, args=(120,), daemon=True).start()  # takes the signal
real_open = os.open


def open_then_signal(path, *args, **kwargs):
    fd = real_open(path, *args, **kwargs)
    if str(path).endswith(".part"):
        os.kill(os.getpid(), signal.SIGINT)
        end = time.monotonic() + 30
        while time.monotonic() < end:  # the handler runs here, once the flag is up
            pass
    return fd


os.open = open_then_signal
try:
    with atomic.atomic_path(Path(sys.argv[1]) / "out.wav") as tmp:
        tmp.write_bytes(b"never published")
finally:
    hard_exit()
"""


def test_a_signal_at_the_temporary_files_creation_leaves_nothing(tmp_path) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    r = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(folder)],
        capture_output=True,
        env=cli_env(),
        timeout=120,
    )
    assert r.returncode == 130, r.stderr
    assert r.stderr == b"pockettts: error: interrupted\n", r.stderr
    assert sorted(p.name for p in folder.iterdir()) == []
