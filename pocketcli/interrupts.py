"""Ctrl-C and SIGTERM: remembered, so no output is published after either.

The handler raises (KeyboardInterrupt, or ``Terminated`` for SIGTERM) so the
stack unwinds and temporary files are removed. Python sometimes swallows an
exception raised inside its own machinery (an import lock callback), so the
signal is also recorded, and ``atomic_path`` refuses to publish a file once
one arrived.
"""

from __future__ import annotations

import signal

stopped_by: list[int] = []


class Terminated(BaseException):
    """Raised in the main thread on SIGTERM so cleanup (temporary files) still runs."""


def _on_signal(signum, frame) -> None:  # noqa: ARG001
    stopped_by.append(signum)
    raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def install_signal_handlers() -> None:
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)


def raise_if_stopped() -> None:
    if stopped_by:
        raise Terminated() if stopped_by[0] == signal.SIGTERM else KeyboardInterrupt()
