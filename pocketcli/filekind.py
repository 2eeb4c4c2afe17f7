"""What is at a path, in words, and the check that an input is a regular file.

Inputs that are read whole or seeked (voice files, recordings) must be
regular files: a FIFO with no writer would block for ever, a character
device like ``/dev/zero`` never ends, a socket cannot be opened. Such a path
is refused before it is opened, with what it really is.
"""

from __future__ import annotations

import errno
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


def not_found(path: str | Path, what: str) -> str:
    """Why ``path``, which ``exists()`` calls absent, cannot be had, in words: a loop of
    symbolic links and a link to nothing are named so (they are not "not found")."""
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return f"{what} {path} is a loop of symbolic links"
        if exc.errno == errno.ENOENT and os.path.islink(path):
            return f"{what} {path} is a symbolic link to {os.readlink(path)}, which does not exist"
        if exc.errno not in (errno.ENOENT, errno.ENOTDIR):
            return f"cannot read {what} {path}: {(exc.strerror or str(exc)).lower()}"
    return f"{what} not found: {path}"


def require_regular(path: str | Path, what: str, error: type[UserError] = UserError) -> None:
    """``path`` exists and is a regular file (links followed); else ``error`` with the cause."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        raise error(not_found(path, what)) from None
    if stat.S_ISDIR(mode):
        raise error(f"{what} is a folder, not a file: {path}")
    if not stat.S_ISREG(mode):
        raise error(f"{what} {path} is {describe_mode(mode)}, not a regular file")
