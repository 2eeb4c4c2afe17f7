"""What is at a path, in words, and the check that an input is a regular file.

Inputs that are read whole or seeked (voice files, recordings) must be
regular files: a FIFO with no writer would block for ever, a character
device like ``/dev/zero`` never ends, a socket cannot be opened. Such a path
is refused before it is opened, with what it really is.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from pocketcli.errors import UserError

_KINDS = (
    (stat.S_ISREG, "a regular file"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def describe_mode(mode: int) -> str:
    """ "a FIFO (named pipe)", "a character device", "a directory", ... for ``st_mode``."""
    return next((words for test, words in _KINDS if test(mode)), "a special file")


def require_regular(path: str | Path, what: str, error: type[UserError] = UserError) -> None:
    """``path`` exists and is a regular file (links followed); else ``error`` with the cause."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise error(f"{what} not found: {path}") from None
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {(exc.strerror or str(exc)).lower()}") from None
    if stat.S_ISDIR(mode):
        raise error(f"{what} is a folder, not a file: {path}")
    if not stat.S_ISREG(mode):
        raise error(f"{what} {path} is {describe_mode(mode)}, not a regular file")
