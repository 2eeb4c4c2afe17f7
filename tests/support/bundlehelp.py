"""The committed tiny model exported once per test run as a KevinAHM v2 bundle."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path

from pocketcli.config import ModelConfig
from tests.support.paths import DATA, FIXTURES

FIXTURE = FIXTURES / "tiny"
TINY_CONFIG = FIXTURE / "config.yaml"
TINY_MODEL = FIXTURE / "model.safetensors"
TINY_TOKENIZER = FIXTURE / "pack" / "tokenizer.model"
PUBLISHED = DATA / "kevinahm-v2-bundle-json"


@lru_cache(maxsize=1)
def tiny_bundle() -> Path:
    """fp32 and int8 graphs of the tiny model (read-only: copy it to change it)."""
    from pocketcli.packs.kevinahm.export import export_bundle

    root = Path(tempfile.mkdtemp(prefix="pockettts-bundle-"))
    atexit.register(shutil.rmtree, root, True)
    config = ModelConfig.from_yaml(TINY_CONFIG)
    return export_bundle(TINY_MODEL, config, TINY_TOKENIZER, root / "tiny", "tiny")


def copy_of_bundle(tmp: Path) -> Path:
    out = tmp / "bundle"
    shutil.copytree(tiny_bundle(), out)
    for p in out.iterdir():
        p.chmod(0o644)
    return out
