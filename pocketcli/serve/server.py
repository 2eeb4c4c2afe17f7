"""Running the app: bind the socket, log where, serve until SIGTERM/Ctrl-C, drain, stop."""

from __future__ import annotations

import socket
from collections.abc import Callable

import uvicorn

from pocketcli.errors import UserError
from pocketcli.serve import logs
from pocketcli.serve.app import create_app
from pocketcli.serve.backend import Backend
from pocketcli.serve.limits import ServeSettings


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


def build(
    load: Callable[[], Backend], settings: ServeSettings, sock: socket.socket
) -> uvicorn.Server:
    """A uvicorn server for the app; a failed model load stops it (``server.load_error``)."""
    app = create_app(load, settings)
    config = uvicorn.Config(
        app,
        log_config=None,
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=settings.shutdown_seconds,
        # The audio is already compressed or tiny per chunk; keep-alive as usual.
        timeout_keep_alive=5,
        # A websocket frame is refused past this, before it is all buffered.
        ws_max_size=settings.limits.ws_max_message_bytes,
    )
    server = uvicorn.Server(config)
    state = app.state.pockettts

    def failed(message: str) -> None:
        server.should_exit = True

    state.on_load_failed = failed
    return server


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
        logs.logger().info("stopped")
    error = server.config.app.state.pockettts.load_error
    if error is not None:
        raise UserError(f"the model could not be loaded: {error}")


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
