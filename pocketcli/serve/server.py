"""Running the app: bind the socket, log where, serve until SIGTERM/Ctrl-C, drain, stop."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import socket
from collections.abc import Callable, Iterator

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from pocketcli.errors import UserError
from pocketcli.frontends import logs
from pocketcli.frontends.backend import Backend
from pocketcli.serve.apierrors import error_body
from pocketcli.serve.app import create_app
from pocketcli.serve.limits import send_json
from pocketcli.serve.settings import ServeSettings


def bind(host: str, port: int) -> socket.socket:
    """The listening socket (``port`` 0: one the OS picks, logged once bound)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise UserError(f"cannot bind to {host}: {exc.strerror or exc}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise UserError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(True)
    return sock


class TimedH11(H11Protocol):
    """uvicorn's h11 protocol with a deadline on a request's line and headers.

    uvicorn times out an idle keep-alive connection (``timeout_keep_alive``) but
    not a new connection that sends nothing, nor headers that trickle in a byte
    at a time (each byte re-arms nothing). This closes the connection when the
    headers are not complete ``header_seconds`` after it opened or after the last
    response ended.
    """

    header_seconds = 10.0  # set per server by ``build``
    max_connections = 64  # likewise: requests on connections beyond get 503

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._header_timer: asyncio.TimerHandle | None = None
        self._arm_header_timer()
        if len(self.connections) > self.max_connections:
            self.app = _too_many_connections  # its requests are answered, and it is closed

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE and self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm_header_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
        super().connection_lost(exc)

    def send_400_response(self, msg: str) -> None:
        """A request that is not valid HTTP (a bad Content-Length, broken chunked framing,
        a malformed header line): OpenAI's error shape, as every other 4xx, where uvicorn
        answers "Invalid HTTP request received." in plain text."""
        message = "the request is not valid HTTP (its request line, headers or body framing)"
        body = json.dumps(error_body(message, "invalid_http")).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ]
        with contextlib.suppress(h11.LocalProtocolError):  # a response already begun
            for event in (
                h11.Response(status_code=400, headers=headers, reason=b"Bad Request"),
                h11.Data(data=body),
                h11.EndOfMessage(),
            ):
                self.transport.write(self.conn.send(event))
        self.transport.close()

    def _arm_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
        self._header_timer = self.loop.call_later(self.header_seconds, self._headers_late)

    def _headers_late(self) -> None:
        self._header_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()


class StoppingServer(uvicorn.Server):
    """uvicorn's server, for which SIGTERM and Ctrl-C are the normal way to stop.

    uvicorn re-raises the signals it caught once it has shut down, which would
    end the process as killed (the CLI's "error: terminated"); here they are
    kept in ``stopped_by`` instead, and ``run`` exits 143 (SIGTERM) or 130
    (Ctrl-C) with no error line: stopping is what the user asked for.
    """

    stopped_by: list[int] = []  # noqa: RUF012  (replaced per run)

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        self.stopped_by = []
        with super().capture_signals():
            yield
            self.stopped_by = list(self._captured_signals)
            self._captured_signals.clear()


async def _too_many_connections(scope, receive, send) -> None:
    if scope["type"] != "http":
        return
    message = "the server has too many open connections; retry shortly"
    await send_json(
        send,
        503,
        error_body(message, "too_many_connections", "server_error"),
        {"Connection": "close", "Retry-After": "1"},
    )


def build(
    load: Callable[[], Backend], settings: ServeSettings, sock: socket.socket
) -> StoppingServer:
    """A uvicorn server for the app; a failed model load stops it (``server.load_error``)."""
    app = create_app(load, settings)
    limits = settings.limits
    protocol = type(
        "ServerH11",
        (TimedH11,),
        {"header_seconds": limits.header_seconds, "max_connections": limits.max_connections},
    )
    config = uvicorn.Config(
        app,
        http=protocol,
        log_config=None,
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=settings.shutdown_seconds,
        timeout_keep_alive=limits.idle_seconds,  # type: ignore[arg-type]  (float works)
        h11_max_incomplete_event_size=H11_MAX_HEADER_BYTES,
        # A websocket frame is refused past this, before it is all buffered.
        ws_max_size=settings.limits.ws_max_message_bytes,
    )
    server = StoppingServer(config)
    state = app.state.pockettts

    def failed(message: str) -> None:
        server.should_exit = True

    state.on_load_failed = failed
    return server


H11_MAX_HEADER_BYTES = 64 * 1024  # a request line and headers larger than this: 400


def run(
    load: Callable[[], Backend], settings: ServeSettings, host: str, port: int, log_level: str
) -> None:
    logs.configure(log_level)
    if not _websockets_available():
        logs.logger().warning(
            "the streaming websocket /tts/ws needs the websockets package: "
            "install it with pip install 'pockettts[serve]'"
        )
    sock = bind(host, port)
    bound_host, bound_port = sock.getsockname()[:2]
    url_host = f"[{bound_host}]" if ":" in bound_host else bound_host
    logs.logger().info(
        "listening",
        extra={
            "url": f"http://{url_host}:{bound_port}",
            "port": bound_port,
            "api_key": bool(settings.api_key),
            "voice_dir": str(settings.voice_dir) if settings.voice_dir else None,
        },
    )
    server = build(load, settings, sock)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
        names = [signal.Signals(s).name for s in server.stopped_by]
        logs.logger().info("stopped", extra={"signal": names[0] if names else None})
    error = server.config.app.state.pockettts.load_error
    if error is not None:
        raise UserError(f"the model could not be loaded: {error}")
    if server.stopped_by:  # the normal stop: the status says which signal, no error line
        raise SystemExit(128 + server.stopped_by[0])


def _websockets_available() -> bool:
    """Whether uvicorn can speak websockets here (it uses websockets, else wsproto)."""
    import importlib

    for module in ("websockets", "wsproto"):
        try:
            importlib.import_module(module)
            return True
        except ImportError:
            pass
    return False
