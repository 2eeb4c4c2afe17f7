"""A tiny pack that times words: the committed tiny model, its word heads sharpened.

The committed tiny pack was built before word timings (and its config lists no heads);
this one is built from the same checkpoint with ``timestamp_heads`` and those heads' query
and key rows scaled up, so their attention moves over the text and words are timed
(random weights leave every frame on the first word).
"""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from pocketcli import PocketTTS
from pocketcli.config import ModelConfig, read_yaml
from pocketcli.packs.builder import build_pack
from tests.support.paths import DATA, TINY

HEADS = [(1, 2), (0, 1)]
SHARPEN = 4.0


def sharpened_checkpoint(out: Path) -> Path:
    weights = load_file(str(TINY / "model.safetensors"))
    d, head_dim = 64, 16
    for layer, head in HEADS:
        w = weights[f"flow_lm.transformer.layers.{layer}.self_attn.in_proj.weight"].copy()
        w[head * head_dim : (head + 1) * head_dim] *= SHARPEN
        w[d + head * head_dim : d + (head + 1) * head_dim] *= SHARPEN
        weights[f"flow_lm.transformer.layers.{layer}.self_attn.in_proj.weight"] = w
    path = out / "model.safetensors"
    save_file(weights, str(path))
    return path


def words_config() -> dict:
    config = copy.deepcopy(read_yaml(TINY / "config.yaml"))
    config["timestamp_heads"] = [{"layer": layer, "head": head} for layer, head in HEADS]
    return config


@pytest.fixture(scope="session")
def words_pack(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("words_pack")
    checkpoint = sharpened_checkpoint(root)
    build_pack(
        checkpoint,
        ModelConfig.from_dict(words_config()),
        DATA / "tokenizer-en" / "tokenizer.model",
        root / "pack",
        precisions=("fp32", "int8", "int4"),
    )
    return root / "pack"


@pytest.fixture(scope="session")
def words_tts(words_pack) -> PocketTTS:
    return PocketTTS.open(runtime="onnx", model_dir=words_pack)


@pytest.fixture(scope="session")
def words_int8(words_pack) -> PocketTTS:
    return PocketTTS.open(runtime="onnx", model_dir=words_pack, precision="int8")


def frame_attention(frames) -> np.ndarray:
    return np.concatenate([f.attention.reshape(-1) for f in frames if f.attention is not None])
