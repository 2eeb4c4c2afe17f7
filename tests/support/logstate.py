"""The loggers ``pocketcli.frontends.logs.configure`` sets, put back as they were after a
test that configures them in this process (else every later test's server logs through
them: its uvicorn lines on whatever stream the test had)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

NAMES = ("pockettts.serve", "uvicorn", "uvicorn.error", "uvicorn.access", "asyncio", "websockets")


@contextmanager
def loggers_restored() -> Iterator[None]:
    saved = {}
    for name in NAMES:
        log = logging.getLogger(name)
        saved[name] = (log.handlers[:], log.level, log.propagate, log.filters[:], log.disabled)
    try:
        yield
    finally:
        for name, (handlers, level, propagate, filters, disabled) in saved.items():
            log = logging.getLogger(name)
            log.handlers[:], log.filters[:] = handlers, filters
            log.setLevel(level)
            log.propagate, log.disabled = propagate, disabled
