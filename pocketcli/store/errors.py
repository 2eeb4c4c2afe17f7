"""Turning download failures into one line that says what to do.

huggingface_hub reports the same situation in several shapes (a 403 on a
file arrives as LocalEntryNotFoundError whose cause is the HTTP error; a
gated repo as GatedRepoError or a bare 401), so the failure is classified by
walking the exception's cause chain rather than by its outer type.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from urllib.parse import urlparse

import httpx2
from huggingface_hub.errors import (
    GatedRepoError,
    HfHubHTTPError,
    LocalEntryNotFoundError,
    OfflineModeIsEnabled,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

from pocketcli.errors import AccessRefused as AccessRefused  # defined there; re-exported
from pocketcli.errors import OfflineMiss as OfflineMiss  # defined there; re-exported
from pocketcli.errors import StoreError as StoreError  # defined there; re-exported
from pocketcli.store.hubclient import (
    SPEED_LIMIT_ENV,
    SPEED_TIME_ENV,
    TIMEOUT_ENV,
    HubTooSlow,
    HubUnreachable,
)

OFFLINE_HINT = "work offline with a cached model"


def _chain(exc: BaseException | None) -> Iterator[BaseException]:
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _find(exc: BaseException, kind: type | tuple[type, ...]):
    return next((e for e in _chain(exc) if isinstance(e, kind)), None)


def _status(exc: BaseException) -> int | None:
    http = _find(exc, HfHubHTTPError)
    response = getattr(http, "response", None)
    return getattr(response, "status_code", None)


def offline_error(what: str, hint: str) -> StoreError:
    return OfflineMiss(
        f"{what} is not in the cache and {{offline}} (or HF_HUB_OFFLINE) forbids downloading "
        f"it: run `{hint}` once while online, or drop {{offline}}",
        "offline",
    )


def gated_message(repo: str, terms_url: str, status: int | None) -> str:
    code = f" (HTTP {status})" if status else ""
    return (
        f"the Hub refused {repo}{code}: it is gated; accept the terms at {terms_url} and "
        "log in with `hf auth login`, or use the weights without voice cloning"
    )


def explain(
    exc: BaseException,
    *,
    what: str,
    repo: str | None = None,
    not_found: str | None = None,
    gated_terms: str | None = None,
    hint: str = "pockettts download",
) -> StoreError | None:
    """The one-line StoreError for a failed download, or None for a failure we do not know.

    Asked in this order: the connection, offline mode, the Hub's answer, the transfer."""
    if (error := _connection(exc, what)) is not None:
        return error
    if _find(exc, OfflineModeIsEnabled) is not None:
        return offline_error(what, hint)
    if (error := _hub_answer(exc, what, repo, not_found, gated_terms)) is not None:
        return error
    return _transfer(exc, what)


def _connection(exc: BaseException, what: str) -> StoreError | None:
    """Too slow, no answer, no name, no connection."""
    slow = _find(exc, HubTooSlow)
    if slow is not None:
        host = urlparse(slow.url).netloc or slow.url
        return StoreError(
            f"{host} sent only {slow.received} bytes in {slow.seconds:.0f} s while fetching "
            f"{what} (the limit is {slow.limit:g} bytes/s): check the connection and run the "
            f"command again (the download resumes), set {SPEED_LIMIT_ENV}/{SPEED_TIME_ENV}, "
            f"or {OFFLINE_HINT}"
        )
    unreachable = _find(exc, HubUnreachable)
    if unreachable is None:
        return None
    host = urlparse(unreachable.url).netloc or unreachable.url
    if unreachable.timed_out:
        return StoreError(
            f"no answer from {host} within {unreachable.timeout:g} s while fetching {what}: "
            f"check the connection (or raise {TIMEOUT_ENV}), or {OFFLINE_HINT}"
        )
    if _find(exc, socket.gaierror) is not None:
        return StoreError(
            f"cannot resolve {host} to fetch {what}: check the connection "
            f"and DNS, or {OFFLINE_HINT}"
        )
    return StoreError(
        f"cannot connect to {host} to fetch {what}: check the connection, or {OFFLINE_HINT}"
    )


def _hub_answer(
    exc: BaseException,
    what: str,
    repo: str | None,
    not_found: str | None,
    gated_terms: str | None,
) -> StoreError | None:
    """What the Hub said: refused, no such revision, file or repository, another status."""
    status = _status(exc)
    if _find(exc, GatedRepoError) is not None or status in (401, 403):
        name = repo or "the repository"
        if gated_terms:
            return AccessRefused(gated_message(name, gated_terms, status), name)
        return AccessRefused(
            f"the Hub refused {name} (HTTP {status}): if it is private or gated, log in with "
            "`hf auth login` with an account that has access",
            name,
        )
    if _find(exc, RevisionNotFoundError) is not None:
        return StoreError(
            f"the pinned revision of {repo or what} is not on the Hub: "
            "this pockettts's catalog may be out of date; update pockettts"
        )
    if _find(exc, RemoteEntryNotFoundError) is not None or status == 404:
        if _find(exc, RepositoryNotFoundError) is not None and not_found is None:
            return StoreError(f"repository {repo} not found on the Hub")
        return StoreError(not_found or f"{what} not found on the Hub (HTTP 404)")
    if _find(exc, RepositoryNotFoundError) is not None:
        return StoreError(
            f"repository {repo} not found on the Hub (if it is private, log in "
            "with `hf auth login`)"
        )
    if status is not None:
        return StoreError(f"the Hub answered HTTP {status} for {what}: try again later")
    return None


def _transfer(exc: BaseException, what: str) -> StoreError | None:
    """The bytes themselves: stalled, cut, short; or no Hub reachable for a cached file."""
    timeout = _find(exc, httpx2.TimeoutException)
    if timeout is not None:
        return StoreError(
            f"the download of {what} stalled and did not resume: check the "
            f"connection and run the command again, or {OFFLINE_HINT}"
        )
    if _find(exc, httpx2.TransportError) is not None:
        return StoreError(
            f"the connection broke while downloading {what}: run the command "
            f"again, or {OFFLINE_HINT}"
        )
    consistency = next(
        (e for e in _chain(exc) if isinstance(e, OSError) and "Consistency check failed" in str(e)),
        None,
    )
    if consistency is not None:
        return StoreError(
            f"{what} arrived with the wrong size (the download was cut short): "
            "run the command again"
        )
    if _find(exc, LocalEntryNotFoundError) is not None:
        return StoreError(
            f"cannot reach the Hub to fetch {what}: check the connection, or {OFFLINE_HINT}"
        )
    return None
