"""MCP on standard input/output, with JSON-RPC's answer for every line it cannot take.

The SDK's own stdio transport drops a line it cannot parse without a word (the
client waits for ever) and reads a line of any length into memory. Here each
line is read with a bound (``max_line_bytes``; the rest of a longer one is
skipped unread) and checked before the SDK sees it; what fails is answered as
JSON-RPC 2.0 says:

- not JSON (a cut-off line), or JSON nested deeper than the SDK's parser follows
  (200 levels): ``-32700`` (parse error), id null (the request's id when it was read);
- JSON that is not one request, notification or response (``[1,2,3]``,
  ``"str"``, ``"jsonrpc": "1.0"``, an object id), or a line over the bound:
  ``-32600`` (invalid request), with the request's id where it has a usable
  one, else null.

While serving, descriptors 0 and 1 point at the null device and stderr, so
nothing a library prints can land on the wire (the SDK does the same).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any, BinaryIO

import anyio
import anyio.to_thread

PARSE_ERROR, INVALID_REQUEST = -32700, -32600
CHUNK = 1 << 16


class LineTooLong:
    """What ``read_line`` gives for a line over the bound (skipped, not kept)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit

    def __str__(self) -> str:
        return f"a message over {self.limit} bytes; the server reads at most {self.limit}"


def read_line(stream: BinaryIO, limit: int) -> bytes | LineTooLong:
    """The next line (b"" at the end), or ``LineTooLong`` once its rest has been skipped
    in bounded pieces (memory stays within ``limit`` whatever the line's length)."""
    line = stream.readline(limit + 1)
    if len(line) <= limit or line.endswith(b"\n"):
        return line
    while True:  # skip to the end of this line, never holding more than a chunk of it
        rest = stream.readline(CHUNK)
        if not rest or rest.endswith(b"\n"):
            return LineTooLong(limit)


def error_line(code: int, message: str, request_id: object = None) -> str:
    body = {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    return json.dumps(body) + "\n"


def _usable_id(message: object) -> object:
    """The message's id when JSON-RPC would accept it (a string or an integer), else None."""
    if not isinstance(message, dict):
        return None
    given = message.get("id")
    if isinstance(given, str) or (isinstance(given, int) and not isinstance(given, bool)):
        return given
    return None


def check_line(line: bytes) -> str | tuple[int, str, object]:
    """The line as text for the SDK, or the JSON-RPC error (code, message, id) it gets."""
    import mcp_types

    try:
        message = json.loads(line)
    except ValueError as exc:  # also bytes that are not UTF-8
        return PARSE_ERROR, f"Parse error: not JSON ({_short(exc)})", None
    except RecursionError:  # "[[[[...": a few kB nest past what any parser here can follow
        return PARSE_ERROR, "Parse error: JSON nested too deeply", None
    try:
        if _request_with_bad_id(message):  # else read as a notification: never answered
            raise ValueError("an id of another type")
        mcp_types.jsonrpc_message_adapter.validate_python(message, by_name=False)
    except Exception:
        return INVALID_REQUEST, f"Invalid Request: {_why_invalid(message)}", _usable_id(message)
    try:  # as the SDK will read it: its parser stops at a depth of 200, and then drops the line
        mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except Exception:
        return PARSE_ERROR, "Parse error: JSON nested too deeply", _usable_id(message)
    return line.decode()


def _request_with_bad_id(message: object) -> bool:
    return (
        isinstance(message, dict)
        and "method" in message
        and "id" in message
        and _usable_id(message) is None
    )


def _why_invalid(message: object) -> str:
    if isinstance(message, list):
        return "a batch (a JSON array); send one message per line"
    if not isinstance(message, dict):
        return f"a message must be a JSON object, not {type(message).__name__}"
    if message.get("jsonrpc") != "2.0":
        return f'"jsonrpc" must be "2.0", not {json.dumps(message.get("jsonrpc"))[:20]}'
    if "id" in message and _usable_id(message) is None:
        return f'"id" must be a string or an integer, not {json.dumps(message["id"])[:40]}'
    if "method" in message and not isinstance(message["method"], str):
        return '"method" must be a string'
    if "params" in message and not isinstance(message["params"], dict):
        return '"params" must be an object'
    return "not a JSON-RPC 2.0 request, notification or response"


def _short(exc: ValueError) -> str:
    return str(exc).splitlines()[0][:80]


class _Wire:
    """The real stdin and stdout, moved off descriptors 0 and 1 for the session."""

    def __init__(self) -> None:
        self._in_fd, self._out_fd = os.dup(0), os.dup(1)
        self.stdin = os.fdopen(self._in_fd, "rb", closefd=False)
        self.stdout = os.fdopen(self._out_fd, "wb", closefd=False)
        self._write_lock = threading.Lock()
        self._saved = (os.dup(0), os.dup(1))
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        os.dup2(2, 1)

    def write(self, text: str) -> None:
        data = text.encode()
        with self._write_lock:  # one whole line at a time: the SDK's and ours never mix
            self.stdout.write(data)
            self.stdout.flush()

    def restore(self) -> None:
        for fd, saved in zip((0, 1), self._saved, strict=True):
            with contextlib.suppress(OSError):
                os.dup2(saved, fd)
            os.close(saved)


class _Stdout:
    """What the SDK writes its messages to (``write`` and ``flush``, async)."""

    def __init__(self, wire: _Wire) -> None:
        self._wire = wire

    async def write(self, text: str) -> None:
        await anyio.to_thread.run_sync(self._wire.write, text)

    async def flush(self) -> None:
        return None


class _Stdin:
    """The lines the SDK reads: only those it can take; the others are answered here."""

    def __init__(self, wire: _Wire, max_line_bytes: int) -> None:
        self._wire, self._limit = wire, max_line_bytes

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        while True:
            line = await anyio.to_thread.run_sync(
                read_line, self._wire.stdin, self._limit, abandon_on_cancel=True
            )
            if line == b"":
                return
            if isinstance(line, LineTooLong):
                await anyio.to_thread.run_sync(
                    self._wire.write, error_line(INVALID_REQUEST, f"Invalid Request: {line}")
                )
                continue
            if not line.strip():
                continue
            checked = check_line(line)
            if isinstance(checked, str):
                yield checked
            else:
                await anyio.to_thread.run_sync(self._wire.write, error_line(*checked))


@contextlib.contextmanager
def wire(max_line_bytes: int) -> Iterator[tuple[Any, Any]]:
    """(stdin, stdout) for ``mcp.server.stdio.stdio_server``, and 0/1 diverted meanwhile."""
    real = _Wire()
    try:
        yield _Stdin(real, max_line_bytes), _Stdout(real)
    finally:
        real.restore()
