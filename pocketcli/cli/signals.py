"""The exit for a run a signal stopped, shared by the console script's first code
(``entry``) and the command runner (``main``), so neither imports the other."""

from __future__ import annotations

from pocketcli.interrupts import hard_exit, stopped_by


def exit_for_signal() -> None:
    """If a signal stopped us: the one-line message and its exit status, now
    (``hard_exit``: temporary files removed, interpreter shutdown skipped)."""
    if stopped_by:
        hard_exit()
