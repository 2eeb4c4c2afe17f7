"""Standard streams the console script can always use, whatever it was started with.

A stream closed at start (``>&-``, ``2>&-``, ``<&-``) gets ``/dev/null`` on its
descriptor, so no file the run opens later lands on descriptor 1 or 2 (and is
then written into by a ``print``), and ``sys.stdout`` is never None. The run
still knows which were closed: ``-o -`` refuses a closed stdout.

Standard error is for messages about the run, never its product: a write
that cannot land there (closed, a full device, a reader gone) is dropped, so
``2>/dev/full`` never turns a success into a failure or a usage error (2)
into 1.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys

_closed: set[str] = set()
_STREAMS = (("stdin", 0, "r"), ("stdout", 1, "w"), ("stderr", 2, "w"))


class _DroppingWriter(io.TextIOWrapper):
    """A text stream whose failed writes and flushes are dropped, not raised."""

    def write(self, text: str) -> int:
        try:
            return super().write(text)
        except (OSError, ValueError):
            return len(text)

    def flush(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            super().flush()


def was_closed(name: str) -> bool:
    """Whether ``name`` ("stdin", "stdout", "stderr") was closed when the process started."""
    return name in _closed


def hold_standard_streams() -> None:
    """Puts ``/dev/null`` on closed standard descriptors and makes stderr never fail."""
    for name, fd, mode in _STREAMS:
        if getattr(sys, name) is not None:
            continue
        _closed.add(name)
        try:
            os.fstat(fd)
            held = True  # something else took the descriptor: leave it alone
        except OSError:
            held = False
        null = os.open(os.devnull, os.O_RDWR)
        if not held and null != fd:
            os.dup2(null, fd)
            os.close(null)
            null = fd
        setattr(sys, name, open(null, mode, encoding="utf-8", closefd=null != fd))  # noqa: SIM115
    err = sys.stderr
    if err is None or isinstance(err, _DroppingWriter):
        return
    try:
        raw = io.FileIO(err.fileno(), "w", closefd=False)
    except (OSError, ValueError, io.UnsupportedOperation):
        return  # not a descriptor (an embedding host's stream): left as it is
    sys.stderr = _DroppingWriter(
        io.BufferedWriter(raw),
        encoding=getattr(err, "encoding", None) or "utf-8",
        errors="backslashreplace",
        line_buffering=True,
        write_through=True,
    )
