"""A tiny pack that times words, for the front ends' tests: the committed tiny model with
its word heads sharpened (``tests/unit/words/conftest.py`` says how and why), fp32 only."""

from __future__ import annotations

from pathlib import Path

from pocketcli.config import ModelConfig
from pocketcli.packs.builder import build_pack
from tests.support.paths import DATA
from tests.unit.words.conftest import sharpened_checkpoint, words_config


def build_words_pack(root: Path) -> Path:
    """Builds it under ``root`` (a fresh folder); returns the pack's folder."""
    checkpoint = sharpened_checkpoint(root)
    config = ModelConfig.from_dict(words_config())
    tokenizer = DATA / "tokenizer-en" / "tokenizer.model"
    build_pack(checkpoint, config, tokenizer, root / "pack", precisions=("fp32",))
    return root / "pack"
