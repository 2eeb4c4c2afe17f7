"""Structured logs: one JSON object per line on stderr (the server's and uvicorn's)."""

from __future__ import annotations

import json
import logging
import sys
import time

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


def configure(level: str = defaults.LOG_LEVEL) -> None:
    """JSON lines for our logger, uvicorn's and asyncio's (uvicorn's access log is
    replaced by ours): every line on stderr is one JSON object."""
    handler = logging.StreamHandler(sys.stderr)
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
