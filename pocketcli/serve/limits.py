"""What one request and one connection may cost, and the checks made before any route runs.

Both checks are plain ASGI middleware (no response buffering), so audio
streams and client disconnects pass through them untouched. Connection-level
bounds (idle and header time, how many connections) are uvicorn's and
``serve.server``'s.
"""

from __future__ import annotations

import hmac
import json
import time

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pocketcli.serve.apierrors import error_body
from pocketcli.serve.settings import MAXIMA, Limits, ServeSettings

__all__ = [
    "ARRIVED",
    "MAXIMA",
    "ApiKey",
    "BodyLimit",
    "Limits",
    "ServeSettings",
    "error_body",
    "send_json",
]

ARRIVED = "pockettts_arrived"  # scope state: when the request reached the app


async def send_json(send: Send, status: int, body: dict, headers: dict | None = None) -> None:
    data = json.dumps(body).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    raw += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": data})


def _boundary(scope: Scope) -> bytes | None:
    """The multipart boundary of the request's Content-Type, if it is multipart."""
    kind = dict(scope["headers"]).get(b"content-type", b"")
    if not kind.lower().startswith(b"multipart/"):
        return None
    for part in kind.split(b";")[1:]:
        key, _, value = part.strip().partition(b"=")
        if key.lower() == b"boundary" and value:
            return value.strip(b'"')
    return None


class _Body:
    """The request's ``receive``, watched: size, time, and a multipart body's end."""

    def __init__(self, receive: Receive, limits: Limits, boundary: bytes | None) -> None:
        self.receive, self.limits = receive, limits
        self.close_delimiter = None if boundary is None else b"--" + boundary + b"--"
        self.deadline = time.monotonic() + limits.body_seconds
        self.received = 0
        self.tail = b""
        self.closed_seen = False
        self.done = False
        self.refusal: tuple[int, dict] | None = None

    def refuse(self, status: int, message: str, code: str) -> Message:
        self.refusal = (status, error_body(message, code))
        return {"type": "http.disconnect"}  # the app sees the client go away and stops reading

    async def __call__(self) -> Message:
        if self.refusal is not None:
            return {"type": "http.disconnect"}
        if self.done:
            return await self.receive()
        try:
            with anyio.fail_after(max(0.0, self.deadline - time.monotonic())):
                message = await self.receive()
        except TimeoutError:
            seconds = self.limits.body_seconds
            return self.refuse(
                408, f"the request body did not arrive within {seconds:g} s", "body_timeout"
            )
        if message["type"] != "http.request":
            return message
        chunk = message.get("body", b"")
        self.received += len(chunk)
        if self.received > self.limits.max_body_bytes:
            return self.too_large()
        self._scan(chunk)
        if not message.get("more_body", False):
            self.done = True
            if self.close_delimiter is not None and not self.closed_seen:
                return self.refuse(
                    400,
                    "the multipart body ends before its closing boundary (a cut upload?)",
                    "truncated_body",
                )
        return message

    def too_large(self) -> Message:
        limit = self.limits.max_body_bytes
        return self.refuse(
            413, f"request body over the server's limit of {limit} bytes", "body_too_large"
        )

    def _scan(self, chunk: bytes) -> None:
        if self.close_delimiter is None or self.closed_seen:
            return
        window = self.tail + chunk
        self.closed_seen = self.close_delimiter in window
        self.tail = window[-(len(self.close_delimiter) - 1) :]


class BodyLimit:
    """Reading the body: 413 over the size limit (by Content-Length before reading, else
    while reading), 408 when it has not arrived within ``body_seconds``, 400 for a
    multipart body that ends before its closing boundary."""

    def __init__(self, app: ASGIApp, limits: Limits) -> None:
        self.app, self.limits = app, limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        scope.setdefault("state", {})[ARRIVED] = time.monotonic()
        body = _Body(receive, self.limits, _boundary(scope))
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and (
            not length.isdigit() or int(length) > self.limits.max_body_bytes
        ):
            body.too_large()
            await self._refuse(send, body)
            return
        started = False

        async def watch(message: Message) -> None:
            nonlocal started
            if body.refusal is not None and not started:
                return  # the app's answer to a body it did not get: ours goes instead
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, body, watch)
        except Exception:
            if body.refusal is None:
                raise
        if body.refusal is not None and not started:
            await self._refuse(send, body)

    @staticmethod
    async def _refuse(send: Send, body: _Body) -> None:
        assert body.refusal is not None
        status, content = body.refusal
        await send_json(send, status, content, {"Connection": "close"})


OPEN_PATHS = ("/healthz", "/readyz", "/health", "/", "/favicon.ico")


def key_matches(headers: dict[bytes, bytes], key: bytes) -> bool:
    """Whether a request's headers carry ``key``: ``Authorization: Bearer KEY`` or
    ``X-API-Key`` (compared in constant time). The websocket checks its handshake so."""
    given = headers.get(b"x-api-key", b"")
    auth = headers.get(b"authorization", b"")
    if auth[:7].lower() == b"bearer ":
        given = auth[7:].strip()
    return hmac.compare_digest(given, key)


class ApiKey:
    """With a key set, every request but health and the page carries it, compared in
    constant time: ``Authorization: Bearer KEY`` (OpenAI's clients) or ``X-API-Key``."""

    def __init__(self, app: ASGIApp, key: str) -> None:
        self.app, self.key = app, key.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        if not key_matches(dict(scope["headers"]), self.key):
            await send_json(
                send,
                401,
                error_body("missing or wrong API key", "invalid_api_key"),
                {"WWW-Authenticate": "Bearer"},
            )
            return
        await self.app(scope, receive, send)
