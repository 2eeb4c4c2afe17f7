"""The exit for a run a signal stopped, shared by the console script's first code
(``entry``) and the command runner (``main``), so neither imports the other."""

from __future__ import annotations

import signal
import sys

from pocketcli.interrupts import stopped_by


def exit_for_signal() -> None:
    """If a signal stopped us: the one-line message and its exit status."""
    if not stopped_by:
        return
    term = stopped_by[0] == signal.SIGTERM
    sys.stderr.write(f"pockettts: error: {'terminated' if term else 'interrupted'}\n")
    raise SystemExit(143 if term else 130)
