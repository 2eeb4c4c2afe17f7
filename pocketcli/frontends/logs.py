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


def configure(level: str = defaults.LOG_LEVEL) -> None:
    """JSON lines for our logger and uvicorn's (its access log is replaced by ours)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    for name in (LOGGER, "uvicorn", "uvicorn.error"):
        log = logging.getLogger(name)
        log.handlers[:] = [handler]
        log.setLevel(level.upper())
        log.propagate = False
    logging.getLogger("uvicorn.access").disabled = True


def logger() -> logging.Logger:
    return logging.getLogger(LOGGER)
