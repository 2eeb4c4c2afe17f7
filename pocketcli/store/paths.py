"""Where the store keeps files, and the environment that decides it.

Everything is read from the environment at call time, not at import time
(huggingface_hub freezes its constants on import): a library user or a test
that changes HF_HOME, HF_ENDPOINT or HF_HUB_OFFLINE after importing
pocketcli still gets what they asked for.

Downloads go to the Hugging Face hub cache (HF_HUB_CACHE, else HF_HOME/hub),
so files are shared with pocket-tts and every other HF tool. What pockettts
makes itself (built ONNX packs, verification marks, configs fetched from
plain URLs) goes to POCKETTTS_CACHE, else to the HF assets cache
(HF_ASSETS_CACHE, else HF_HOME/assets) under ``pockettts``: the place
huggingface_hub reserves for libraries' own files, so moving HF_HOME moves
everything.
"""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_ENDPOINT = "https://huggingface.co"
_TRUE = {"1", "ON", "YES", "TRUE"}


def _expand(value: str) -> Path:
    return Path(os.path.expandvars(os.path.expanduser(value)))


def hf_home() -> Path:
    default = os.path.join(os.environ.get("XDG_CACHE_HOME", "~/.cache"), "huggingface")
    return _expand(os.environ.get("HF_HOME", default))


def hub_cache_dir() -> Path:
    """The huggingface_hub cache (``models--org--name/`` folders)."""
    value = os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE")
    return _expand(value) if value else hf_home() / "hub"


def store_dir() -> Path:
    """pockettts's own files: built packs, verification marks, URL downloads."""
    value = os.environ.get("POCKETTTS_CACHE")
    if value:
        return _expand(value)
    assets = os.environ.get("HF_ASSETS_CACHE") or os.environ.get("HUGGINGFACE_ASSETS_CACHE")
    return (_expand(assets) if assets else hf_home() / "assets") / "pockettts"


def env_offline() -> bool:
    """HF_HUB_OFFLINE (or the older TRANSFORMERS_OFFLINE), read as huggingface_hub reads it."""
    value = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE") or ""
    return value.upper() in _TRUE


def hub_endpoint() -> str:
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")
