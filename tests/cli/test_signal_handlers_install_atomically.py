"""A stop signal that arrives while the handlers are being installed waits for them.

Installing SIGINT's handler, then SIGTERM's, then the others leaves windows where
one signal already has ours and the next still has its default action (SIGTERM's:
a silent death, temporary files left). ``install_signal_handlers`` blocks them all
while it installs, so a signal sent in such a window is handled by ours once they
are all in place: the one line and 128 + N, never a silent kill.
"""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

# The signal arrives right after the first handler is in, before the next: the window.
SCRIPT = """
import os, signal, sys
real = signal.signal
sent = []

def installing(signum, handler):
    old = real(signum, handler)
    if not sent:
        sent.append(signum)
        os.kill(os.getpid(), int(sys.argv[1]))
    return old

signal.signal = installing
from pocketcli import interrupts
interrupts.install_signal_handlers(armed=False)
signal.signal = real
print("survived the install", flush=True)
"""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1])
def test_a_signal_between_two_installs_meets_our_handler(signum: int) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(int(signum))],
        capture_output=True,
        text=True,
        timeout=60,
    )
    # Before the fix: killed by the signal's default action (returncode -N), silently.
    assert proc.returncode == 128 + signum, (proc.returncode, proc.stderr)
    assert proc.stderr.startswith("pockettts: error: ") and proc.stderr.count("\n") == 1
    assert "survived" not in proc.stdout  # not armed: the signal ends the process
