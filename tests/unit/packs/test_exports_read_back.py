"""An export read back says what its source says (issue 33, exporters): the browser pack's
chunking, a flow-matching model's bundle, an int8 bundle's description."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from pocketcli import PocketTTS
from pocketcli.config import ModelConfig
from pocketcli.options import SpeakOptions
from pocketcli.runtimes.kevinahm import Bundle
from tests.support.bundlehelp import TINY_CONFIG, TINY_MODEL, TINY_TOKENIZER
from tests.support.paths import TINY
from tests.support.webhelp import tiny_web_pack

LONG = (
    "A page that speaks a browser pack cuts the text where pocket_tts.json says, so the"
    " pack must say the chunk size the model speaks with; otherwise the page's chunks end"
    " elsewhere, and its audio is not ours. Here are many more words, so that the text"
    " needs several chunks of tokens, whatever the size of each one is, in this test."
)


def test_the_browser_packs_chunk_size_is_the_one_pockettts_speaks_with() -> None:
    """A page reads ``max_chunk_tokens`` to cut text: it must cut where we do."""
    pack = tiny_web_pack()
    meta = json.loads((pack / "pocket_tts.json").read_text(encoding="utf-8"))
    tts = PocketTTS.open(runtime="onnx", model_dir=pack)
    as_page = tts.script(LONG, max_tokens=meta["max_chunk_tokens"])
    as_ours = tts.script(LONG)
    assert len(as_ours) > 2
    assert [getattr(c, "text", c) for c in as_page] == [getattr(c, "text", c) for c in as_ours]


def _flow_matching(tmp_path: Path) -> ModelConfig:
    raw = yaml.safe_load(TINY_CONFIG.read_text())
    raw["flow_lm"]["flow"]["type"] = "flow_matching"  # one time condition, t
    return ModelConfig.from_dict(raw)


def test_a_flow_matching_bundle_speaks_as_our_pack_of_the_same_model(tmp_path) -> None:
    """A flow-matching head takes one time, ``t``: the bundle's flow graph must read it
    (a graph reading ``s`` sees the zero a KevinAHM runtime feeds there; with one decode
    step t is 0 too, so several steps)."""
    from pocketcli.packs.builder import build_pack
    from pocketcli.packs.kevinahm.export import export_bundle

    config = _flow_matching(tmp_path)
    build_pack(TINY_MODEL, config, TINY_TOKENIZER, tmp_path / "pack")
    export_bundle(TINY_MODEL, config, TINY_TOKENIZER, tmp_path / "bundle", "fm", ("fp32",))
    audio = []
    for folder in ("pack", "bundle"):
        tts = PocketTTS.open(runtime="onnx", model_dir=tmp_path / folder)
        out = tts.synthesize("Hello there, friend.", tts.voices.get(TINY / "voice.safetensors"),
                             SpeakOptions(seed=3, decode_steps=4))  # fmt: skip
        audio.append(np.asarray(getattr(out, "samples", out)))
    ours, bundle = audio
    assert ours.size == bundle.size
    assert np.abs(ours - bundle).max() < 1e-4 and np.abs(ours).max() > 0.1


@pytest.mark.parametrize("precisions", [("int8",), ("fp32", "int8"), ("fp32",)])
def test_a_bundles_description_lists_the_precisions_it_holds(tmp_path, precisions) -> None:
    """pockettts.json's precisions are the folder's: an int8 bundle holds fp32 graphs too
    (the exporter quantises them), and a reader choosing a precision from the sidecar
    must find its graphs."""
    from pocketcli.packs.kevinahm.export import export_bundle

    config = ModelConfig.from_yaml(TINY_CONFIG)
    out = export_bundle(TINY_MODEL, config, TINY_TOKENIZER, tmp_path / "b", "t", precisions)
    sidecar = json.loads((out / "pockettts.json").read_text(encoding="utf-8"))
    assert tuple(sidecar["precisions"]) == Bundle.read(out).precisions
    for precision in sidecar["precisions"]:
        tts = PocketTTS.open(runtime="onnx", model_dir=out, precision=precision)
        assert tts.synthesize("Hi.", tts.voices.get(TINY / "voice.safetensors")).size
