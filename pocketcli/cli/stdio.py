"""Standard streams the console script can always use, whatever it was started with.

A stream closed at start (``>&-``, ``2>&-``, ``<&-``) gets ``/dev/null`` on its
descriptor, so no file the run opens later lands on descriptor 1 or 2 (and is
then written into by a ``print``), and ``sys.stdout`` is never None. The run
still knows which were closed: ``-o -`` refuses a closed stdout.

Standard error is for messages about the run, never its product: a write
that cannot land there (closed, a full device, a reader gone) is dropped, so
``2>/dev/full`` never turns a success into a failure or a usage error (2)
into 1.

Standard output is the run's product: a text write that fails there raises
``StandardOutputGone`` when its reader went away (``| head``: the run ends
quietly with 141, as Unix tools do) and a ``UserError`` naming standard output
and the cause otherwise (``>/dev/full``: "cannot write standard output: the
disk is full"). Neither is an ``OSError``, so click's own handling (a silent
exit 1 for a broken pipe) never sees them.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys

_closed: set[str] = set()
_replaced: list[io.TextIOWrapper] = []
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


class StandardOutputGone(Exception):
    """The reader of standard output went away: the run ends quietly with 141."""


STDOUT_GONE_STATUS = 141  # 128 + SIGPIPE, what a Unix tool's status is then


def stdout_failure(exc: OSError) -> Exception:
    """What a failed write to standard output means to the user."""
    if isinstance(exc, BrokenPipeError):
        return StandardOutputGone()
    from pocketcli.atomic import os_reason
    from pocketcli.errors import UserError

    return UserError(f"cannot write standard output: {os_reason(exc)}")


def drop_stdout() -> None:
    """``/dev/null`` on descriptor 1: what is left buffered for stdout can no longer fail
    (at exit Python flushes it again)."""
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, sys.stdout.fileno())
    os.close(null)


class _ReportingWriter(io.TextIOWrapper):
    """A text stream whose failed writes raise what ``stdout_failure`` says."""

    unbuffered = False  # each write is flushed, as Python's unbuffered stdout

    def write(self, text: str) -> int:
        try:
            written = super().write(text)
            if self.unbuffered:
                super().flush()
            return written
        except OSError as exc:
            raise stdout_failure(exc) from None

    def flush(self) -> None:
        try:
            super().flush()
        except OSError as exc:
            raise stdout_failure(exc) from None


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
    out = sys.stdout
    if type(out) is io.TextIOWrapper:  # Python's own (not a test's or a host's)
        out.flush()
        binary = out.buffer
        unbuffered = isinstance(binary, io.RawIOBase)  # python -u, PYTHONUNBUFFERED
        if unbuffered:  # a raw write may land in part (a pipe whose reader left):
            binary = io.BufferedWriter(binary)  # buffered writes finish or raise
        sys.stdout = _ReportingWriter(
            binary,
            encoding=out.encoding,
            errors=out.errors,
            line_buffering=out.line_buffering,
            write_through=out.write_through,
        )
        sys.stdout.unbuffered = unbuffered
        _replaced.append(out)  # kept: collecting it would close the descriptor under us
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
