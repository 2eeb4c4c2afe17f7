"""``pockettts corpus``: MiniMax phrase lists for other languages, from the Hub dataset.

Each upstream line is ``<cloning_audio_filename>|<text>``: the text after the
first ``|`` is kept, under a header naming source, revision and licence.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from pocketcli.atomic import atomic_path
from pocketcli.bench.corpus import MINIMAX_REPO, MINIMAX_REVISION, corpus_dir


def minimax_lines(raw: str) -> list[str]:
    out = []
    for line in raw.splitlines():
        if not line.strip():
            continue
        _, sep, text = line.partition("|")
        out.append((text if sep else line).strip())
    return [x for x in out if x]


def download_dataset_file(repo: str, filename: str, revision: str, offline: bool) -> Path:
    """One file of a Hub dataset, through the store's deadline, cache and hash checks."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    from pocketcli.store.errors import explain, offline_error
    from pocketcli.store.fetch import verify_blob
    from pocketcli.store.hubclient import install_deadline, no_network
    from pocketcli.store.paths import env_offline, hub_cache_dir, hub_endpoint

    what = f"{repo}/{filename}"
    install_deadline()
    kwargs = {"repo_id": repo, "filename": filename, "revision": revision,
              "repo_type": "dataset", "cache_dir": str(hub_cache_dir()),
              "endpoint": hub_endpoint()}
    try:
        with no_network():
            return verify_blob(Path(hf_hub_download(**kwargs, local_files_only=True)), what)
    except (LocalEntryNotFoundError, OSError, ValueError):
        pass
    if offline or env_offline():
        raise offline_error(what, "pockettts corpus --languages ...")
    try:
        path = hf_hub_download(**kwargs)
    except Exception as exc:
        mapped = explain(exc, what=what, repo=repo, hint="pockettts corpus --languages ...")
        if mapped is None:
            raise
        raise mapped from exc
    return verify_blob(Path(path), what)


def fetch_minimax(languages: list[str], *, revision: str | None = None,
                  out_dir: Path | None = None, offline: bool = False) -> Iterator[Path]:
    revision = revision or MINIMAX_REVISION
    out_dir = out_dir or corpus_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    for language in languages:
        local = download_dataset_file(MINIMAX_REPO, f"text/{language}.txt", revision, offline)
        lines = minimax_lines(Path(local).read_text(encoding="utf-8"))
        header = [
            f"# MiniMax Multilingual TTS Test Set — {language}",
            f"# Source:   https://huggingface.co/datasets/{MINIMAX_REPO}",
            f"# Revision: {revision}",
            "# License:  CC-BY-SA-4.0 (Creative Commons Attribution-ShareAlike 4.0)",
            f"# Phrases:  {len(lines)}",
        ]
        target = out_dir / f"minimax-{language}.txt"
        with atomic_path(target) as tmp:
            tmp.write_text("\n".join(header + lines) + "\n", encoding="utf-8")
        yield target
