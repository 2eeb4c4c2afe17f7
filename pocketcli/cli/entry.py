"""The console script's first code: signal handling before any heavy import.

Ctrl-C or SIGTERM can arrive while numpy or ONNX Runtime are still being
imported; handlers installed here make that a clean exit 130/143 as well.
"""

from __future__ import annotations

import signal
import sys

from pocketcli.interrupts import install_signal_handlers, stopped_by


def exit_for_signal() -> None:
    """If a signal stopped us: the one-line message and its exit status."""
    if not stopped_by:
        return
    term = stopped_by[0] == signal.SIGTERM
    sys.stderr.write(f"pockettts: error: {'terminated' if term else 'interrupted'}\n")
    raise SystemExit(143 if term else 130)


def run() -> None:
    install_signal_handlers()
    try:
        from pocketcli.cli.main import run as main
    except BaseException:
        exit_for_signal()
        raise
    main()
    exit_for_signal()
