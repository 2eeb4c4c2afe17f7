"""Where the harness keeps fetched corpora: POCKETTTS_CACHE, else the HF-style cache."""

from __future__ import annotations

import os
from pathlib import Path


def user_corpus_dir() -> Path:
    root = os.environ.get("POCKETTTS_CACHE")
    if root:
        return Path(root) / "corpora"
    hf_home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "huggingface")
    return Path(hf_home).parent / "pockettts" / "corpora"
