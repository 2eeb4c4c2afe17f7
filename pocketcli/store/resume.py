"""Downloads that survive the process: a partial file is kept and resumed next run.

huggingface_hub 2.x downloads into a temporary file that is deleted when the
process stops, so a Ctrl-C'd 400 MB checkpoint starts over. Large (LFS)
files, whose sha256 the Hub announces, are therefore fetched here instead:
into ``<store>/partial/<sha256>.part``, appended to with an HTTP Range on the
next attempt, checked against the sha256, then moved to
``<store>/blobs/<sha256>`` and recorded under the hf:// reference, where
``cached_hf_file`` finds it without any request. Small git files still go
through huggingface_hub (there is nothing to resume).
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from pocketcli.store.paths import store_dir

SHA256 = re.compile(r"[0-9a-f]{64}")


def _ref_key(ref_key: str) -> Path:
    return store_dir() / "refs" / hashlib.sha256(ref_key.encode()).hexdigest()[:40]


def recorded_blob(ref_key: str) -> Path | None:
    """The blob a previous resumable download stored for this reference, if any."""
    key = _ref_key(ref_key)
    try:
        sha = key.read_text(encoding="ascii").strip()
    except OSError:
        return None
    blob = store_dir() / "blobs" / sha
    return blob if SHA256.fullmatch(sha) and blob.is_file() else None


def partial_path(sha: str) -> Path:
    return store_dir() / "partial" / f"{sha}.part"


def download_lfs(
    ref_key: str,
    what: str,
    *,
    location: str,
    sha: str,
    size: int | None,
    headers: dict,
    tqdm_class=None,
) -> Path:
    """Fetches ``location`` into the partial file (resuming), then publishes the blob."""
    from huggingface_hub.file_download import http_get

    from pocketcli.store.errors import StoreError

    partial = partial_path(sha)
    partial.parent.mkdir(parents=True, exist_ok=True)
    have = partial.stat().st_size if partial.exists() else 0
    if size is not None and have > size:
        partial.unlink()
        have = 0
    if size is None or have < size:
        with open(partial, "ab") as f:
            http_get(
                location,
                f,
                resume_size=have,
                headers=headers,
                expected_size=size,
                displayed_filename=Path(what).name,
                tqdm_class=tqdm_class,
            )
    digest = hashlib.sha256()
    with open(partial, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    if digest.hexdigest() != sha:
        partial.unlink(missing_ok=True)
        raise StoreError(
            f"{what} is corrupted: its sha256 is {digest.hexdigest()[:16]}..., the Hub "
            f"announced {sha[:16]}...; the partial file was deleted, run the command again"
        )
    blob = store_dir() / "blobs" / sha
    blob.parent.mkdir(parents=True, exist_ok=True)
    os.replace(partial, blob)
    mark = store_dir() / "verified" / sha  # checked just now: fetch.verify_blob trusts it
    mark.parent.mkdir(parents=True, exist_ok=True)
    mark.touch()
    key = _ref_key(ref_key)
    key.parent.mkdir(parents=True, exist_ok=True)
    key.write_text(sha + "\n", encoding="ascii")
    return blob
