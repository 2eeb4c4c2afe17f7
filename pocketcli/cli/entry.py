"""The console script's first code: signal handling before any heavy import.

Ctrl-C or SIGTERM can arrive while numpy or ONNX Runtime are still being
imported; handlers installed here (when this module is imported, before
anything else) make that a clean exit 130/143 as well.
"""

from __future__ import annotations

import sys

from pocketcli.interrupts import install_signal_handlers

# Until run() can unwind, a signal ends it at once; for tts and the servers, Ctrl-C and
# SIGTERM without a line (their normal stop), from the very first moment.
install_signal_handlers(armed=False, quiet_for=sys.argv[1:])

from pocketcli.cli.signals import exit_for_signal  # noqa: E402
from pocketcli.cli.stdio import (  # noqa: E402
    STDOUT_GONE_STATUS,
    StandardOutputGone,
    drop_stdout,
    hold_standard_streams,
    stdout_failure,
)
from pocketcli.errors import UserError  # noqa: E402
from pocketcli.interrupts import finishing  # noqa: E402

hold_standard_streams()  # closed stdio gets /dev/null; stderr never fails the run


def run() -> None:
    code: object = 0
    try:
        install_signal_handlers()  # armed: from here a signal unwinds through the except
        if sys.argv[1:] == ["--version"]:  # the commonest probe: no command line to build
            from pocketcli import __version__

            sys.stdout.write(f"pockettts {__version__}\n")
        else:
            from pocketcli.cli.main import run as main

            main()
    except SystemExit as exc:
        code = exc.code
    except BaseException:
        exit_for_signal()
        raise
    finishing()
    exit_for_signal()
    code = _flush_stdout(code)
    sys.stderr.flush()
    raise SystemExit(code)


def _flush_stdout(code: object) -> object:
    """What is left of stdout is written now: a reader gone (``| head``) ends quietly with
    141; a full device fails a run that succeeded, with one line. Either way nothing is
    left for Python to fail on again at exit."""
    try:
        try:
            sys.stdout.flush()
        except OSError as exc:
            raise stdout_failure(exc) from None
        return code
    except (StandardOutputGone, UserError, ValueError) as exc:
        drop_stdout()
        if code not in (0, None):
            return code
        if isinstance(exc, StandardOutputGone):
            return STDOUT_GONE_STATUS
        sys.stderr.write(f"pockettts: error: {exc}\n")
        return 1
