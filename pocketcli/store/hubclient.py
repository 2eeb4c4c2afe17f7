"""A deadline on every request huggingface_hub makes, and failing fast when the Hub is away.

huggingface_hub 2.x builds its shared httpx2 client with ``timeout=None`` and
several calls (``repo_info``) pass ``timeout=None`` explicitly, so a server
that accepts a connection and never answers blocks it forever; neither
``etag_timeout`` nor a client-level timeout fixes that. What works is to set
the timeout on each request as it is sent. We do it in ``Client.send``
(public httpx API), which every request, redirect and stream goes through,
whatever transport or proxy the environment configures.

The same hook stops huggingface_hub's retry loops on a dead network: after a
failed metadata request it retries with exponential backoff (about 23 s of
sleeping plus six deadlines) before saying the file is unreachable. A
command-line user is better served by one clear failure, so a request that
cannot connect or gets no answer within the deadline raises
``HubUnreachable``, which huggingface_hub does not catch. Range requests are
the exception: they are huggingface_hub resuming a download whose connection
dropped, and its own bounded retries (five, one second apart) are what make
the resume work, so those keep raising httpx errors.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx2
import huggingface_hub
from huggingface_hub import constants
from huggingface_hub.errors import OfflineModeIsEnabled

from pocketcli.errors import UserError

DEFAULT_TIMEOUT = 30.0
TIMEOUT_ENV = "POCKETTTS_HUB_TIMEOUT"
# Like curl's --speed-limit/--speed-time: a download that brings fewer than
# SPEED_LIMIT bytes per second on average over SPEED_TIME seconds is dropped
# (a server trickling a byte every few seconds never trips a read timeout).
SPEED_LIMIT_ENV = "POCKETTTS_HUB_SPEED_LIMIT"
SPEED_TIME_ENV = "POCKETTTS_HUB_SPEED_TIME"
DEFAULT_SPEED_LIMIT = 1024.0  # bytes per second
DEFAULT_SPEED_TIME = 30.0  # seconds


class HubTooSlow(Exception):  # noqa: N818 - reads better at the raise site
    """A response body arrived slower than the speed limit (not an httpx error, so
    huggingface_hub does not retry it; a resumable download keeps its partial file)."""

    def __init__(self, url: str, received: int, seconds: float, limit: float) -> None:
        self.url = url
        self.received = received
        self.seconds = seconds
        self.limit = limit
        super().__init__(f"{received} bytes in {seconds:.1f} s from {url}")


class HubUnreachable(Exception):  # noqa: N818 - reads better at the raise site
    """No connection to, or no answer from, the Hub within the deadline."""

    def __init__(self, url: str, timeout: float, cause: Exception) -> None:
        self.url = url
        self.timeout = timeout
        self.timed_out = isinstance(cause, httpx2.TimeoutException)
        super().__init__(f"{type(cause).__name__} for {url}: {cause}")


def hub_timeout() -> float:
    """Seconds to wait for a connection or for the next bytes of an answer."""
    return _positive_env(TIMEOUT_ENV, DEFAULT_TIMEOUT, "seconds")


def _positive_env(name: str, default: float, unit: str) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not (value > 0 and value != float("inf")):
        raise UserError(f"{name}={raw!r} is not a positive number of {unit}")
    return value


def speed_limit() -> tuple[float, float]:
    """(bytes per second, seconds) below which a download is dropped."""
    return (
        _positive_env(SPEED_LIMIT_ENV, DEFAULT_SPEED_LIMIT, "bytes per second"),
        _positive_env(SPEED_TIME_ENV, DEFAULT_SPEED_TIME, "seconds"),
    )


class _Paced(httpx2.SyncByteStream):
    """A response body that raises ``HubTooSlow`` when it trickles."""

    def __init__(self, inner: httpx2.SyncByteStream, url: str, limit: float, window: float):
        self._inner = inner
        self._url = url
        self._limit = limit
        self._window = window

    def __iter__(self) -> Iterator[bytes]:
        started = time.monotonic()
        received = 0
        for chunk in self._inner:
            received += len(chunk)
            elapsed = time.monotonic() - started
            if elapsed >= self._window:
                if received < self._limit * elapsed:
                    raise HubTooSlow(self._url, received, elapsed, self._limit)
                started, received = time.monotonic(), 0
            yield chunk

    def close(self) -> None:
        self._inner.close()


_offline_depth = 0
_offline_lock = threading.Lock()


@contextmanager
def no_network() -> Iterator[None]:
    """Neither huggingface_hub nor our client sends anything inside this block.

    Cache lookups (``local_files_only=True``) still build request headers, and
    building them can fetch the Hub's agent registry (user-agent telemetry)
    unless huggingface_hub believes it is offline; so the block sets its
    offline flag, and our client refuses any request that slips through.
    """
    global _offline_depth
    with _offline_lock:
        _offline_depth += 1
        saved = constants.HF_HUB_OFFLINE
        constants.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        with _offline_lock:
            _offline_depth -= 1
            if _offline_depth == 0:
                constants.HF_HUB_OFFLINE = saved


class DeadlineClient(httpx2.Client):
    """An httpx2 client whose every request has a deadline and fails fast when unanswered.

    The deadline caps each phase (connect, each read, write, pool wait); a shorter
    timeout huggingface_hub asked for (its 10 s metadata and download defaults, 3 s
    for its telemetry registry) is kept.
    """

    def __init__(self, timeout: float, **kwargs: Any) -> None:
        super().__init__(timeout=timeout, **kwargs)
        self.deadline = timeout

    def send(self, request: httpx2.Request, **kwargs: Any) -> httpx2.Response:
        if _offline_depth:
            raise OfflineModeIsEnabled(f"pockettts is offline: no request to {request.url}")
        asked = request.extensions.get("timeout") or {}
        request.extensions["timeout"] = {
            key: self.deadline if asked.get(key) is None else min(asked[key], self.deadline)
            for key in ("connect", "read", "write", "pool")
        }
        waited = request.extensions["timeout"]["read"]
        resuming = "range" in request.headers
        streaming = kwargs.pop("stream", False)
        try:
            response = super().send(request, stream=True, **kwargs)
        except httpx2.TimeoutException as exc:
            if resuming:
                raise
            raise HubUnreachable(str(request.url), waited, exc) from exc
        except (httpx2.NetworkError, httpx2.RemoteProtocolError) as exc:
            if resuming:
                raise
            # One immediate retry covers a pooled connection the server had closed.
            try:
                response = super().send(request, stream=True, **kwargs)
            except httpx2.TransportError as again:
                raise HubUnreachable(str(request.url), waited, again) from exc
        limit, window = speed_limit()
        if isinstance(response.stream, httpx2.SyncByteStream):
            response.stream = _Paced(response.stream, str(request.url), limit, window)
        if not streaming:
            try:
                response.read()
            except BaseException:
                response.close()
                raise
        return response


def _client_factory(timeout: float) -> Callable[[], httpx2.Client]:
    try:
        from huggingface_hub.utils._http import hf_request_event_hook

        hooks = {"request": [hf_request_event_hook]}
    except ImportError:  # private helper: request ids are a nicety, not a need
        hooks = {}

    def make() -> httpx2.Client:
        return DeadlineClient(timeout, follow_redirects=True, event_hooks=hooks)

    return make


_lock = threading.Lock()
_installed: float | None = None


def install_deadline() -> float:
    """Makes huggingface_hub use a DeadlineClient; returns the deadline in seconds."""
    global _installed
    timeout = hub_timeout()
    with _lock:
        if _installed != timeout:
            huggingface_hub.set_client_factory(_client_factory(timeout))
            _installed = timeout
    return timeout


def get_session() -> httpx2.Client:
    """The shared huggingface_hub client, with the deadline installed."""
    install_deadline()
    return huggingface_hub.get_session()
