"""The committed tiny model's pack as the builder makes it now (the committed pack was
built before some of the builder's changes, and is kept to prove such packs still work)."""

from __future__ import annotations

from pathlib import Path

from pocketcli.config import ModelConfig, read_yaml
from pocketcli.packs.builder import build_pack
from tests.support.paths import DATA, TINY


def build_tiny_pack(out: Path) -> Path:
    """fp32 and int8 of the tiny model in ``out``."""
    build_pack(
        TINY / "model.safetensors",
        ModelConfig.from_dict(read_yaml(TINY / "config.yaml")),
        DATA / "tokenizer-en" / "tokenizer.model",
        out,
        precisions=("fp32", "int8"),
    )
    return out
