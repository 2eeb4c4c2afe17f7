"""Word timings from the fused batched step (issue 34) are those of the plain step it
replaced: the same pack's weights with the plain step, streams alone and together."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from pocketcli import PocketTTS, SpeakOptions
from pocketcli.config import ModelConfig
from pocketcli.packs.checkpoint import read_checkpoint
from pocketcli.packs.flowlm_graphs import build_flowlm_step_batch
from pocketcli.packs.graph_files import remove_graph, save_graph
from pocketcli.packs.manifest import PackManifest
from tests.unit.words.conftest import words_config

TEXTS = ["Hello there, this is the longest line. It is spoken in several chunks!", "Short one."]


@pytest.fixture(scope="module")
def plain_words_pack(words_pack, tmp_path_factory) -> Path:
    """``words_pack`` with the plain batched step (fp32), as packs built before it have."""
    out = tmp_path_factory.mktemp("plain_words") / "pack"
    shutil.copytree(words_pack, out)
    weights = read_checkpoint(words_pack.parent / "model.safetensors")
    fl = ModelConfig.from_dict(words_config()).flow_lm
    manifest = PackManifest.read(words_pack)
    graph = out / manifest.graphs["fp32"]["flowlm_step_batch"]
    remove_graph(graph)
    save_graph(build_flowlm_step_batch(weights, fl, fused=False), graph)
    manifest.write(out)
    return out


def _attention(tts: PocketTTS, together: bool) -> list[np.ndarray]:
    opts = SpeakOptions(seed=7, max_tokens=12, words=True)
    if together:  # read in turns, so the scheduler steps them in one batch
        streams = [iter(tts.stream(text, None, opts)) for text in TEXTS]
        frames: list[list] = [[] for _ in TEXTS]
        live = set(range(len(TEXTS)))
        while live:
            for i in sorted(live):
                frame = next(streams[i], None)
                if frame is None:
                    live.discard(i)
                else:
                    frames[i].append(frame)
    else:
        frames = [list(tts.stream(text, None, opts)) for text in TEXTS]
    return [
        np.concatenate([f.attention.reshape(-1) for f in fs if f.attention is not None])
        for fs in frames
    ]


@pytest.mark.parametrize("together", [False, True])
def test_fused_word_attention_is_the_plain_one(words_pack, plain_words_pack, together) -> None:
    fused = PocketTTS.open(runtime="onnx", model_dir=words_pack)
    plain = PocketTTS.open(runtime="onnx", model_dir=plain_words_pack)
    assert fused.runtime._fused and not plain.runtime._fused
    for a, b in zip(_attention(plain, together), _attention(fused, together), strict=True):
        assert a.shape == b.shape and a.size > 0
        assert np.abs(a - b).max() < 1e-5
