"""What one request may ask for, and the two checks made before any route runs.

Both checks are plain ASGI middleware (no response buffering), so audio
streams and client disconnects pass through them untouched.
"""

from __future__ import annotations

import hmac
import json
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pocketcli.serve.settings import Limits, ServeSettings

__all__ = ["ApiKey", "BodyLimit", "Limits", "ServeSettings", "error_body", "send_json"]

ARRIVED = "pockettts_arrived"  # scope state: when the request reached the app


async def send_json(send: Send, status: int, body: dict, headers: dict | None = None) -> None:
    data = json.dumps(body).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    raw += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": data})


def error_body(message: str, code: str, kind: str = "invalid_request_error") -> dict:
    """OpenAI's error shape; ``detail`` too, as pocket-tts's (FastAPI's) clients read it."""
    return {
        "error": {"message": message, "type": kind, "param": None, "code": code},
        "detail": message,
    }


class BodyLimit:
    """413 for a body over the limit: by Content-Length before reading, else while reading."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        scope.setdefault("state", {})[ARRIVED] = time.monotonic()
        too_large = error_body(
            f"request body over the server's limit of {self.max_bytes} bytes", "body_too_large"
        )
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_bytes):
            await send_json(send, 413, too_large)
            return
        received = 0
        over = False
        started = False

        async def limited() -> Message:
            nonlocal received, over
            if over:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    over = True  # the app sees the client go away and stops reading
                    return {"type": "http.disconnect"}
            return message

        async def watch(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                if over:
                    return
                started = True
            if over and not started:
                return
            await send(message)

        try:
            await self.app(scope, limited, watch)
        except Exception:
            if not over:
                raise
        if over and not started:
            await send_json(send, 413, too_large)


OPEN_PATHS = ("/healthz", "/readyz", "/health", "/", "/favicon.ico")


class ApiKey:
    """With a key set, every request but health and the page carries it, compared in
    constant time: ``Authorization: Bearer KEY`` (OpenAI's clients) or ``X-API-Key``."""

    def __init__(self, app: ASGIApp, key: str) -> None:
        self.app, self.key = app, key.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        given = headers.get(b"x-api-key", b"")
        auth = headers.get(b"authorization", b"")
        if auth[:7].lower() == b"bearer ":
            given = auth[7:].strip()
        if not hmac.compare_digest(given, self.key):
            await send_json(
                send,
                401,
                error_body("missing or wrong API key", "invalid_api_key"),
                {"WWW-Authenticate": "Bearer"},
            )
            return
        await self.app(scope, receive, send)
