"""The console script's first code: signal handling before any heavy import.

Ctrl-C or SIGTERM can arrive while numpy or ONNX Runtime are still being
imported; handlers installed here make that a clean exit 130/143 as well.
"""

from __future__ import annotations

from pocketcli.cli.signals import exit_for_signal
from pocketcli.interrupts import install_signal_handlers


def run() -> None:
    install_signal_handlers()
    try:
        from pocketcli.cli.main import run as main
    except BaseException:
        exit_for_signal()
        raise
    main()
    exit_for_signal()
