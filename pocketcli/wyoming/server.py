"""Listening: ``tcp://HOST:PORT``, ``unix://PATH`` or ``stdio://``, until SIGTERM or Ctrl-C.

The socket is bound first (a taken port fails at once), the model loaded,
then connections are served, each by its own ``PocketHandler`` sharing the
one model (generations take turns on its lock, as under ``serve``). On
SIGTERM/SIGINT the listener closes, every connection's synthesis is
cancelled, and the command exits with the signal's status (143/130).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from pocketcli.errors import UserError
from pocketcli.frontends import logs
from pocketcli.frontends.admission import JobRunner, make_admission
from pocketcli.frontends.backend import Backend
from pocketcli.frontends.voices import VoiceBook
from pocketcli.wyoming.handler import PocketHandler, Service, WyomingLimits

LOOPBACK = ("127.0.0.1", "localhost", "::1")


@dataclass(frozen=True)
class Address:
    scheme: str  # tcp, unix or stdio
    host: str = ""
    port: int = 0
    path: str = ""


def parse_uri(uri: str) -> Address:
    """``--uri``'s value, or a ``ValueError`` saying what a good one looks like."""
    parsed = urlparse(uri)
    if parsed.scheme == "stdio":
        return Address("stdio")
    if parsed.scheme == "unix":
        path = (parsed.netloc + parsed.path) if parsed.netloc else parsed.path
        if not path:
            raise ValueError(f"{uri!r} names no socket file (unix:///run/pockettts.sock)")
        return Address("unix", path=path)
    if parsed.scheme == "tcp":
        try:
            port = parsed.port
        except ValueError:  # not a number, or past 65535
            raise ValueError(f"{uri!r}: the port must be a number from 0 to 65535") from None
        if not parsed.hostname or port is None:
            raise ValueError(f"{uri!r} needs a host and a port (tcp://127.0.0.1:10200)")
        return Address("tcp", host=parsed.hostname, port=port)
    raise ValueError(f"{uri!r}: use tcp://HOST:PORT, unix://PATH or stdio://")


def run(
    load: Callable[[], Backend],
    address: Address,
    limits: WyomingLimits,
    voice_dir: Path | None,
    log_level: str,
) -> None:
    logs.configure(log_level)
    stopped = asyncio.run(_serve(load, address, limits, voice_dir))
    if stopped is not None:  # ends the command as the signal says (143 or 130), one line
        from pocketcli.interrupts import install_signal_handlers, stopped_by

        install_signal_handlers()
        stopped_by.append(stopped)


async def _serve(
    load: Callable[[], Backend], address: Address, limits: WyomingLimits, voice_dir: Path | None
) -> int | None:
    """Serves until a signal (returned) or, on stdio, the end of standard input (None)."""
    log = logs.logger()
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    signals: list[int] = []

    def on_signal(signum: int) -> None:
        signals.append(signum)
        stop.set()

    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, on_signal, signum)
    handlers: dict[PocketHandler, asyncio.Task] = {}
    service: Service | None = None
    admitted = limits.admission
    runner: JobRunner = make_admission(admitted.max_queue, None, admitted.max_streams)

    async def connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        assert service is not None
        handler = PocketHandler(reader, writer, service)
        task = asyncio.current_task()
        assert task is not None
        handlers[handler] = task
        try:
            await handler.run()
        except asyncio.CancelledError:
            pass  # the server is stopping; asyncio's stream callback must not see it
        finally:
            handlers.pop(handler, None)

    server: asyncio.AbstractServer | None = None
    try:
        server = await _bind(address, connected)
        loading = asyncio.ensure_future(asyncio.to_thread(load))
        stopping = asyncio.ensure_future(stop.wait())
        await asyncio.wait({loading, stopping}, return_when=asyncio.FIRST_COMPLETED)
        if not loading.done():
            loading.cancel()
            return signals[0]
        stopping.cancel()
        try:
            backend = loading.result()
        except Exception as exc:
            raise UserError(f"the model could not be loaded: {exc}") from None
        service = Service(backend, VoiceBook(backend, voice_dir), limits, runner)
        if server is not None:
            await server.start_serving()  # listen() happens here, not at the bind
            log.info("listening", extra=_where(address, server))
            await stop.wait()
        else:  # stdio: one client, the process that started us
            from wyoming.event import async_get_stdin, async_get_stdout

            reader, writer = await async_get_stdin(), await async_get_stdout()
            log.info("listening", extra=_where(address, server))
            client = asyncio.ensure_future(connected(reader, writer))
            stopping = asyncio.ensure_future(stop.wait())
            await asyncio.wait({client, stopping}, return_when=asyncio.FIRST_COMPLETED)
            stopping.cancel()
        return signals[0] if signals else None
    finally:
        if server is not None:
            server.close()
        tasks = list(handlers.values())
        for task in tasks:  # each cancels its synthesis on the way out (``disconnect``)
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.to_thread(runner.close, 10.0)
        if address.scheme == "unix":
            with contextlib.suppress(OSError):
                Path(address.path).unlink()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)
        if server is not None or service is not None:  # not when it never listened
            log.info("stopped")


async def _bind(address: Address, connected) -> asyncio.AbstractServer | None:  # noqa: ANN001
    try:
        if address.scheme == "tcp":
            return await asyncio.start_server(
                connected, address.host, address.port, start_serving=False
            )
        if address.scheme == "unix":
            path = Path(address.path)
            if path.exists() and not path.is_socket():
                raise UserError(f"cannot listen on {path}: it exists and is not a socket")
            path.unlink(missing_ok=True)
            return await asyncio.start_unix_server(connected, path, start_serving=False)
    except OSError as exc:  # asyncio's own words wrap the system's: say the system's
        where = address.path or f"{address.host}:{address.port}"
        known = exc.errno is not None and exc.errno > 0  # getaddrinfo's are negative
        cause = os.strerror(exc.errno) if known else (exc.strerror or str(exc))
        if exc.errno == errno.EADDRINUSE:
            cause += " (another server is on it: stop it, or choose another address)"
        raise UserError(f"cannot listen on {where}: {cause.lower()}") from None
    return None


def _where(address: Address, server: asyncio.AbstractServer | None) -> dict:
    if address.scheme == "tcp" and server is not None:
        host, port = server.sockets[0].getsockname()[:2]
        shown = f"[{host}]" if ":" in host else host
        return {"uri": f"tcp://{shown}:{port}", "port": port}
    if address.scheme == "unix":
        return {"uri": f"unix://{address.path}"}
    return {"uri": "stdio://"}
