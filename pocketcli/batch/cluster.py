"""Reaching a Ray cluster's address before Ray is asked to join it (``--ray HOST:PORT`` of
batch runs and of ``serve``): an address that accepts no connection is one line at once,
where Ray would retry for minutes (twenty attempts of about 40 s each in Ray 2.x)."""

from __future__ import annotations

import socket

from pocketcli.batch.argv import RAY_LOCAL
from pocketcli.errors import UserError

CONNECT_SECONDS = 5.0  # reaching a cluster's address


def check_reachable(address: str) -> None:
    """A ``HOST:PORT`` (or ``ray://HOST:PORT``) that accepts no TCP connection within
    ``CONNECT_SECONDS``: ``UserError`` naming it. ``local``, ``auto`` and what is not
    ``HOST:PORT`` are left to Ray."""
    if address in (RAY_LOCAL, "auto"):
        return
    hostport = address.split("://", 1)[-1].rsplit("/", 1)[0]
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        return  # Ray says what is wrong with it
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_SECONDS):
            pass
    except OSError as exc:
        raise UserError(
            f"cannot join the Ray cluster at {address}: {exc.strerror or exc}"
        ) from None
