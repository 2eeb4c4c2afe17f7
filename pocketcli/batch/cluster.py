"""What ``--ray`` of batch runs and of ``serve`` do before Ray gets anything: reaching the
cluster's address (one that accepts no connection is one line at once, where Ray would
retry for minutes: twenty attempts of about 40 s each in Ray 2.x), and the user's paths
made absolute (a worker or replica runs in Ray's working folder, or on another node)."""

from __future__ import annotations

import socket
from dataclasses import replace
from pathlib import Path

from pocketcli.batch.argv import RAY_LOCAL
from pocketcli.errors import UserError
from pocketcli.options import ModelRequest

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


def absolute(path: Path | None) -> Path | None:
    """``path`` as a worker elsewhere finds it: relative to this command's folder no more."""
    return None if path is None else path.absolute()


def absolute_request(request: ModelRequest) -> ModelRequest:
    """``request`` with its paths (--model-dir, a local --config) made absolute before Ray
    gets it: relative, they name nothing (or something else) in a worker's folder."""
    from pocketcli.store.fetch import is_remote

    config = request.config
    if config is not None and not is_remote(config):
        config = str(Path(config).absolute())
    return replace(request, model_dir=absolute(request.model_dir), config=config)
