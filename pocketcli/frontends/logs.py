"""Structured logs: one JSON object per line on stderr (the server's and uvicorn's)."""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from typing import TextIO

from pocketcli import defaults

LOGGER = "pockettts.serve"
_STANDARD = set(logging.makeLogRecord({}).__dict__) | {"message", "asctime", "color_message"}


class JsonFormatter(logging.Formatter):
    """``{"time", "level", "logger", "event", ...fields}``: ``extra=`` fields are kept."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info).splitlines()[-1]
        return json.dumps(entry, ensure_ascii=False, default=str)


# asyncio says this once per write to a connection already lost (dozens of lines for
# one client that left mid-stream); the request's own log line says the client went away.
_LOST_WRITES = "socket.send() raised exception."


def _not_a_lost_write(record: logging.LogRecord) -> bool:
    return record.msg != _LOST_WRITES


class _CurrentStderr(logging.StreamHandler):
    """Writes each line to ``sys.stderr`` as it is then (as ``logging.lastResort`` does):
    a stream with no descriptor to copy is the host's (a test's capture, an embedding
    program's buffer), which it may close or swap once ``configure`` has returned."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property  # type: ignore[override]
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, _value: TextIO) -> None:
        pass  # always the current sys.stderr


def _stderr_handler() -> logging.StreamHandler:
    """A handler on a copy of descriptor 2 (``_own_stderr``), or on whatever ``sys.stderr``
    is at each line when it has no real descriptor."""
    own = _own_stderr()
    return _CurrentStderr() if own is None else logging.StreamHandler(own)


def _own_stderr() -> TextIO | None:
    """A copy of descriptor 2 for the log: while a noisy C decoder's descriptor 2 points at
    /dev/null for a moment (``audio.read``), the log's lines still arrive. None when
    ``sys.stderr`` is no real descriptor."""
    try:
        sys.stderr.flush()
        fd = sys.stderr.fileno()
        st = os.fstat(fd)
    except (AttributeError, OSError, ValueError):
        return None
    key = (st.st_dev, st.st_ino)
    if key not in _COPIES:  # one copy per file: configure() may be called again
        _COPIES[key] = os.fdopen(os.dup(fd), "w", buffering=1, encoding="utf-8", errors="replace")
    return _COPIES[key]


_COPIES: dict[tuple[int, int], TextIO] = {}


def configure(level: str = defaults.LOG_LEVEL) -> None:
    """JSON lines for our logger, uvicorn's and asyncio's (uvicorn's access log is
    replaced by ours): every line on stderr is one JSON object."""
    handler = _stderr_handler()
    handler.setFormatter(JsonFormatter())
    for name in (LOGGER, "uvicorn", "uvicorn.error", "asyncio", "websockets"):
        log = logging.getLogger(name)
        log.handlers[:] = [handler]
        log.setLevel(level.upper() if name.startswith(("pockettts", "uvicorn")) else "WARNING")
        log.propagate = False
    logging.getLogger("asyncio").filters[:] = [_not_a_lost_write]
    logging.getLogger("uvicorn.access").disabled = True


def logger() -> logging.Logger:
    return logging.getLogger(LOGGER)
