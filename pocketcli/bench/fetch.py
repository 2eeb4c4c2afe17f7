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


def fetch_minimax(
    languages: list[str],
    *,
    revision: str | None = None,
    out_dir: Path | None = None,
    offline: bool = False,
) -> Iterator[Path]:
    from pocketcli.store.fetch import Fetch, HfRef, fetch_hf_file
    from pocketcli.store.paths import env_offline
    from pocketcli.store.progress import Reporter

    revision = revision or MINIMAX_REVISION
    out_dir = out_dir or corpus_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    for language in languages:
        ref = HfRef(MINIMAX_REPO, f"text/{language}.txt", revision, repo_type="dataset")
        job = Fetch(
            what=f"the MiniMax {language} phrases", hint=f"pockettts corpus --languages {language}"
        )
        local = fetch_hf_file(ref, job, offline or env_offline(), Reporter(False))
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
