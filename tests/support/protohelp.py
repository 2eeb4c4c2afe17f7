"""The protocol servers as users run them: `pockettts wyoming` / `pockettts mcp` as real
processes, their stderr drained on a thread (so a chatty server never blocks) and read
for the JSON log lines the tests wait on."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from typing import Any

from tests.support.cli import SCRIPT
from tests.support.paths import FIXTURES

TINY = FIXTURES / "tiny"
PACK = TINY / "pack"
VOICE = TINY / "voice.safetensors"
TINY_ARGS = ("--model-dir", str(PACK), "--voice-file", str(VOICE), "--runtime", "onnx")


class Stderr(threading.Thread):
    """Keeps every line a child writes to stderr; waits for a JSON log event."""

    def __init__(self, proc: subprocess.Popen) -> None:
        super().__init__(daemon=True)
        self.proc = proc
        self.lines: list[str] = []
        self.changed = threading.Condition()
        self.start()

    def run(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            with self.changed:
                self.lines.append(raw.decode(errors="replace").rstrip("\n"))
                self.changed.notify_all()
        with self.changed:
            self.lines.append("")  # the end: wakes the waiters
            self.changed.notify_all()

    def events(self) -> list[dict]:
        out = []
        for line in list(self.lines):
            if line.startswith("{"):
                out.append(json.loads(line))
        return out

    def wait_event(self, name: str, timeout: float = 60.0) -> dict:
        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                for entry in self.events():
                    if entry.get("event") == name:
                        return entry
                left = deadline - time.monotonic()
                if left <= 0 or (
                    self.lines and self.lines[-1] == "" and self.proc.poll() is not None
                ):
                    raise AssertionError(f"no {name!r} log line; stderr: {self.lines[-20:]}")
                self.changed.wait(min(left, 0.5))

    def text(self) -> str:
        return "\n".join(self.lines)


@contextmanager
def spawn(
    *args: str, stdin: int | None = None, stdout: int | None = None
) -> Iterator[tuple[subprocess.Popen, Stderr]]:
    proc = subprocess.Popen(
        [SCRIPT, *args],
        stdin=stdin if stdin is not None else subprocess.DEVNULL,
        stdout=stdout if stdout is not None else subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    err = Stderr(proc)
    try:
        yield proc, err
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(30)


def without_module(module: str, *argv: str) -> subprocess.CompletedProcess:
    """``pockettts ARGV...`` in a process where ``module`` cannot be imported."""
    code = (
        f"import sys; sys.modules[{module!r}] = None; sys.argv = ['pockettts', *{list(argv)!r}];"
        "from pocketcli.cli.entry import run; run()"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)


def one_line(stderr: bytes) -> str:
    lines = stderr.decode().strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def run_async(coro: Coroutine[Any, Any, Any], deadline: float = 120) -> Any:
    """Runs a client's coroutine to its end, failing after ``deadline`` seconds."""
    return asyncio.run(asyncio.wait_for(coro, deadline))
