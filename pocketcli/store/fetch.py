"""Fetching one source (hf://, https:// or a local path) into the cache, safely.

Rules every fetch follows:

- the local cache is tried first with ``local_files_only=True``: a cached
  file at a pinned revision never costs a request;
- offline (``--offline`` or HF_HUB_OFFLINE) stops there;
- every request has the deadline of ``hubclient``;
- a downloaded file whose bytes do not hash to the sha256 the Hub announced
  (the blob name huggingface_hub stores it under) is deleted, not used.
  huggingface_hub checks the size but not the hash, so this is ours; a mark
  in the store remembers a blob already checked, so the hash is computed
  once per blob, also for blobs that were cached before a crash could
  interrupt their check.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urljoin, urlparse

from huggingface_hub import hf_hub_download
from huggingface_hub.errors import LocalEntryNotFoundError

from pocketcli.atomic import atomic_path
from pocketcli.store.errors import StoreError, explain, offline_error
from pocketcli.store.hubclient import get_session, install_deadline, no_network
from pocketcli.store.paths import hub_cache_dir, hub_endpoint, store_dir
from pocketcli.store.progress import Reporter
from pocketcli.store.resume import download_lfs, recorded_blob

SHA256 = re.compile(r"[0-9a-f]{64}")
_CHUNK = 1 << 20


@dataclass(frozen=True)
class HfRef:
    """``hf://org/name/path/in/repo@revision``, the URL form pocket-tts configs use."""

    repo: str
    path: str
    revision: str | None = None
    repo_type: str = "model"  # "dataset" for Hub datasets (the MiniMax corpus)

    @property
    def key(self) -> str:
        """Names this file in our resumable-download records."""
        return f"{self.repo_type}:{self.repo}/{self.path}@{self.revision or 'main'}"

    @classmethod
    def parse(cls, url: str) -> HfRef:
        rest = url.removeprefix("hf://")
        parts = rest.split("/")
        if not url.startswith("hf://") or len(parts) < 3 or not all(parts[:3]):
            raise StoreError(f"{url!r} is not an hf://org/repo/path[@revision] URL")
        path = "/".join(parts[2:])
        revision = None
        if "@" in path:
            path, revision = path.rsplit("@", 1)
        return cls("/".join(parts[:2]), path, revision or None)

    def __str__(self) -> str:
        return f"hf://{self.repo}/{self.path}" + (f"@{self.revision}" if self.revision else "")


@dataclass(frozen=True)
class Fetch:
    """How to describe a fetch in messages (and, for web files, how big it may be)."""

    what: str
    hint: str = "pockettts download"
    not_found: str | None = None
    gated_terms: str | None = None
    max_bytes: int | None = None  # refuse a web file larger than this


# A web file (a config YAML by URL) is used from the cache without any request
# for this long, then revalidated with its ETag / Last-Modified.
URL_CACHE_SECONDS = 24 * 3600
_LOOPBACK = ("localhost", "127.0.0.1", "::1", "[::1]")


def is_remote(source: str) -> bool:
    return source.startswith(("hf://", "https://", "http://"))


def check_url(url: str) -> None:
    """https only, or plain http to this machine (a test server, a local mirror)."""
    parsed = urlparse(url)
    host = (parsed.hostname or "").lower()
    if parsed.scheme == "https" and host:
        return
    if parsed.scheme == "http" and (host in _LOOPBACK or host.startswith("127.")):
        return
    raise StoreError(f"refusing {url}: only https:// (or http:// to this machine) is allowed")


def resolve_remote_name(name: str, base: str) -> str:
    """A file named by a config fetched from ``base`` (a URL): hf:// or https:// as
    is, a relative name resolved against ``base``; a local path is refused."""
    if name.startswith("hf://"):
        return name
    if name.startswith(("https://", "http://")):
        check_url(name)
        return name
    if "://" in name or name.startswith(("/", "~", "\\")) or Path(name).is_absolute():
        raise StoreError(
            f"config {base} names {name!r}: a config fetched from the network may only name "
            "hf:// or https:// files, or names relative to its own URL"
        )
    if base.startswith("hf://"):
        ref = HfRef.parse(base)
        folder = ref.path.rsplit("/", 1)[0] if "/" in ref.path else ""
        joined = urljoin(f"/{folder}/" if folder else "/", name).lstrip("/")
        rest = f"@{ref.revision}" if ref.revision else ""
        return f"hf://{ref.repo}/{joined}{rest}"
    resolved = urljoin(base, name)
    check_url(resolved)
    return resolved


def _hub_kwargs(ref: HfRef) -> dict:
    return {
        "repo_id": ref.repo,
        "filename": ref.path,
        "revision": ref.revision,
        "repo_type": ref.repo_type,
        "cache_dir": str(hub_cache_dir()),
        "endpoint": hub_endpoint(),
    }


def cached_hf_file(ref: HfRef) -> Path | None:
    """The cached copy of an hf:// file, without any request, or None."""
    try:
        with no_network():
            return Path(hf_hub_download(**_hub_kwargs(ref), local_files_only=True))
    except (LocalEntryNotFoundError, OSError, ValueError):
        return recorded_blob(ref.key)


def _download(ref: HfRef, job: Fetch, reporter: Reporter) -> Path:
    """Large files resumably (see resume.py), small git files through huggingface_hub."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_url
    from huggingface_hub.utils import build_hf_headers

    url = hf_hub_url(
        ref.repo, ref.path, revision=ref.revision, repo_type=ref.repo_type, endpoint=hub_endpoint()
    )
    meta = get_hf_file_metadata(url, endpoint=hub_endpoint())
    sha = (meta.etag or "").strip('"')
    if not SHA256.fullmatch(sha) or not meta.location or meta.location == url:
        return Path(hf_hub_download(**_hub_kwargs(ref), tqdm_class=reporter.tqdm_class(job.what)))
    return download_lfs(
        ref.key,
        f"{ref.repo}/{ref.path}",
        location=meta.location,
        sha=sha,
        size=meta.size,
        headers=build_hf_headers(),
        tqdm_class=reporter.tqdm_class(job.what),
    )


def fetch_hf_file(ref: HfRef, job: Fetch, offline: bool, reporter: Reporter) -> Path:
    """The path of an hf:// file in the hub cache, downloading it if needed and allowed."""
    install_deadline()
    cached = cached_hf_file(ref)
    if cached is not None:
        return verify_blob(cached, job.what)
    if offline:
        raise offline_error(job.what, job.hint)
    reporter.progress_line(f"downloading {job.what} ({ref.repo}/{ref.path})")
    try:
        path = _download(ref, job, reporter)
    except StoreError:
        raise
    except Exception as exc:
        mapped = explain(
            exc,
            what=job.what,
            repo=ref.repo,
            not_found=job.not_found,
            gated_terms=job.gated_terms,
            hint=job.hint,
        )
        if mapped is None:
            raise
        raise mapped from exc
    return verify_blob(Path(path), job.what)


def _mark(etag: str) -> Path:
    return store_dir() / "verified" / etag


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def verify_blob(path: Path, what: str) -> Path:
    """Checks a cached file against the sha256 it is stored under; deletes it on mismatch."""
    blob = Path(os.path.realpath(path))
    etag = blob.name
    if blob.parent.name != "blobs" or not SHA256.fullmatch(etag):
        return path  # a git (non-LFS) file: the Hub gives no sha256 to check against
    mark = _mark(etag)
    if mark.exists():
        return path
    actual = sha256_file(blob)
    if actual != etag:
        for item in (path, blob):
            Path(item).unlink(missing_ok=True)
        raise StoreError(
            f"{what} is corrupted: its sha256 is {actual[:16]}..., the Hub announced "
            f"{etag[:16]}...; the file was deleted, run the command again"
        )
    mark.parent.mkdir(parents=True, exist_ok=True)
    mark.touch()
    return path


def _url_cache_path(url: str) -> Path:
    name = Path(urlparse(url).path).name or "download"
    return store_dir() / "urls" / f"{hashlib.sha256(url.encode()).hexdigest()[:32]}-{name}"


def _meta_path(dest: Path) -> Path:
    return dest.with_name(dest.name + ".meta.json")


def _read_meta(dest: Path) -> dict:
    try:
        meta = json.loads(_meta_path(dest).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


def fetch_url(url: str, job: Fetch, offline: bool, reporter: Reporter) -> Path:
    """An https file (a config YAML, say), cached in the store under a hash of its URL.

    A cached copy is used without a request for ``URL_CACHE_SECONDS``, then
    revalidated (ETag / Last-Modified; 304 keeps it). Offline, any cached copy
    is used. ``job.max_bytes`` caps the size.
    """
    check_url(url)
    dest = _url_cache_path(url)
    meta = _read_meta(dest) if dest.is_file() else {}
    if dest.is_file() and (offline or time.time() - meta.get("checked", 0) < URL_CACHE_SECONDS):
        return dest
    if offline:
        raise offline_error(job.what, job.hint)
    dest.parent.mkdir(parents=True, exist_ok=True)
    client = get_session()
    reporter.progress_line(f"downloading {job.what} ({url})")
    headers = {}
    if dest.is_file() and meta.get("etag"):
        headers["If-None-Match"] = str(meta["etag"])
    if dest.is_file() and meta.get("last_modified"):
        headers["If-Modified-Since"] = str(meta["last_modified"])
    try:
        with client.stream("GET", url, headers=headers) as response:
            if response.status_code == 304 and dest.is_file():
                _write_meta(dest, {**meta, "checked": time.time()})
                return dest
            if response.status_code >= 400:
                raise StoreError(
                    job.not_found
                    if response.status_code == 404 and job.not_found
                    else f"HTTP {response.status_code} for {url}"
                )
            _check_size(job, url, response.headers.get("content-length"))
            received = 0
            with atomic_path(dest) as tmp, open(tmp, "wb") as f:
                for chunk in response.iter_bytes(_CHUNK):
                    received += len(chunk)
                    _check_size(job, url, received)
                    f.write(chunk)
            _write_meta(
                dest,
                {
                    "url": url,
                    "etag": response.headers.get("etag"),
                    "last_modified": response.headers.get("last-modified"),
                    "checked": time.time(),
                },
            )
    except StoreError:
        raise
    except Exception as exc:
        mapped = explain(exc, what=job.what, hint=job.hint)
        if mapped is None:
            raise
        raise mapped from exc
    return dest


def _check_size(job: Fetch, url: str, size: int | str | None) -> None:
    if job.max_bytes is None or size is None:
        return
    try:
        value = int(size)
    except ValueError:
        return
    if value > job.max_bytes:
        raise StoreError(
            f"{job.what} at {url} is larger than {job.max_bytes // 1024} KB: not a config file"
        )


def _write_meta(dest: Path, meta: dict) -> None:
    with atomic_path(_meta_path(dest)) as tmp:
        tmp.write_text(json.dumps(meta), encoding="utf-8")


def _local(source: str, base_dir: Path | None) -> Path:
    path = Path(source).expanduser()
    if not path.is_absolute() and base_dir is not None and (base_dir / path).exists():
        path = base_dir / path
    return path


def cached_source(source: str, what: str, base_dir: Path | None = None) -> Path | None:
    """A source already on disk (cache or local path), checked, without any request."""
    if source.startswith("hf://"):
        cached = cached_hf_file(HfRef.parse(source))
        return verify_blob(cached, what) if cached is not None else None
    if source.startswith(("https://", "http://")):
        check_url(source)
        dest = _url_cache_path(source)
        return dest if dest.is_file() else None
    path = _local(source, base_dir)
    return path if path.is_file() else None


def fetch_source(
    source: str, job: Fetch, offline: bool, reporter: Reporter, base_dir: Path | None = None
) -> Path:
    """hf://, http(s):// or a local path (relative to ``base_dir`` if it exists there)."""
    if source.startswith("hf://"):
        return fetch_hf_file(HfRef.parse(source), job, offline, reporter)
    if source.startswith(("https://", "http://")):
        return fetch_url(source, job, offline, reporter)
    path = _local(source, base_dir)
    if not path.is_file():
        raise StoreError(f"{job.what} not found: {path}")
    return path
