"""The console script's first code: signal handling before any heavy import.

Ctrl-C or SIGTERM can arrive while numpy or ONNX Runtime are still being
imported; handlers installed here (when this module is imported, before
anything else) make that a clean exit 130/143 as well.
"""

from __future__ import annotations

from pocketcli.interrupts import install_signal_handlers

install_signal_handlers(armed=False)  # until run() can unwind, a signal ends it at once

import contextlib  # noqa: E402 - after the handlers, on purpose
import sys  # noqa: E402

from pocketcli.cli.signals import exit_for_signal  # noqa: E402
from pocketcli.interrupts import finishing  # noqa: E402


def run() -> None:
    code: object = 0
    try:
        install_signal_handlers()  # armed: from here a signal unwinds through the except
        from pocketcli.cli.main import run as main

        main()
    except SystemExit as exc:
        code = exc.code
    except BaseException:
        exit_for_signal()
        raise
    finishing()
    exit_for_signal()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    raise SystemExit(code)
