"""Every config pocket-tts 4.0.1 ships builds into a pack that speaks like the oracle.

Full-size configs are shrunk in width and depth (the same structure: GQA,
z projection, low-rank tables, flow-head types, separate decoder SEANet and
transformer, 512-d voice latents); the small 2026-10 models run at their real size.
Shrunk, the 27 configs have six distinct model structures (the others differ only in
weights and text rules; every config's text rules are checked against pocket-tts in
tests/unit/text/test_frontend.py): one config of each builds and speaks here, and a
test checks that every shipped config has one of those six structures, so a new
structure in a later pocket-tts fails here rather than going untested. (All 27 once
passed; they took a minute and a half of a 15-minute suite.) One 24-layer config also
runs at its real depth (narrow width), so layer indexing, per-layer caches and voice
states are checked past the first few layers.
"""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
import yaml

pytest.importorskip("torch")
pytest.importorskip("pocket_tts")

from pocket_tts.utils.config import CONFIGS_DIR  # noqa: E402

from pocketcli import PocketTTS  # noqa: E402
from pocketcli.options import SpeakOptions
from tests.support.reference import (  # noqa: E402
    TOKENIZER_MODEL,
    build_reference,
    synthetic_voice_audio,
)

pytestmark = pytest.mark.oracle
CONFIGS = sorted(p.stem for p in Path(CONFIGS_DIR).glob("*.yaml"))
# One config per distinct shrunk model structure.
STRUCTURES = (
    "english_2026-04",
    "english_2026-01",
    "english_drifting_26-09",
    "english_18m_2026-10",
    "english_7m_2026-10",
    "english_2m_2026-10",
)
TEXT = "Hello world. Every config speaks!"


def _shrink_mimi(m: dict) -> None:
    seanet = m["seanet"]
    if m.get("inner_dim") == seanet["dimension"]:
        m["inner_dim"] = 64
    seanet.update(n_filters=8, dimension=64)
    m["transformer"].update(
        d_model=64,
        num_heads=4,
        num_layers=1,
        dim_feedforward=128,
        input_dimension=64,
        output_dimensions=[64],
    )
    if not m.get("decoder_seanet"):
        m["quantizer"]["output_dimension"] = 64
        m["outer_dim"] = 64


def shrunk(name: str, keep_depth: bool = False) -> dict:
    d = yaml.safe_load((Path(CONFIGS_DIR) / f"{name}.yaml").read_text(encoding="utf-8"))
    for key in [k for k in d if k.startswith("weights_path")]:
        del d[key]
    fl = d["flow_lm"]
    fl.pop("weights_path", None)
    fl["lookup_table"].update(tokenizer="sentencepiece", tokenizer_path=str(TOKENIZER_MODEL))
    t = fl["transformer"]
    if t["d_model"] >= 512:  # the full-size families
        t.update(d_model=64, num_heads=4)
        if not keep_depth:
            t["num_layers"] = 2
        if t.get("attn_dim"):
            t["attn_dim"] = 64
        if t.get("num_kv_heads"):
            t["num_kv_heads"] = 2
        if t.get("dim_feedforward"):
            t["dim_feedforward"] = 128
        fl["lookup_table"]["dim"] = 64
        fl["flow"].update(dim=32, depth=2)
        if fl.get("z_dim"):
            fl["z_dim"] = 32
        _shrink_mimi(d["mimi"])
    return copy.deepcopy(d)


def model_structure(name: str) -> dict:
    """What of a shrunk config the model's graphs are made from (not its text rules)."""
    config = shrunk(name)
    return {"flow_lm": config["flow_lm"], "mimi": config["mimi"]}


def test_every_config_has_the_structure_of_one_that_runs() -> None:
    runs = [model_structure(name) for name in STRUCTURES]
    assert all(a != b for i, a in enumerate(runs) for b in runs[i + 1 :])  # none twice
    untested = [name for name in CONFIGS if model_structure(name) not in runs]
    assert not untested, f"configs of a structure no test builds: {untested}"


@pytest.mark.parametrize("name", STRUCTURES)
def test_config_builds_and_matches_the_oracle(name: str, tmp_path: Path) -> None:
    ref = build_reference(shrunk(name), 5, tmp_path / "ref")
    ref.build_pack(tmp_path / "pack")
    voice_state = ref.voice_state_from_audio(synthetic_voice_audio(seconds=1.5), 24_000)
    ref.export_voice(voice_state, tmp_path / "voice.safetensors")
    assert_speaks_as_the_oracle(
        ref, voice_state, PocketTTS.open(runtime="onnx", model_dir=tmp_path / "pack"), tmp_path
    )


def assert_speaks_as_the_oracle(ref, voice_state, tts: PocketTTS, tmp_path: Path) -> None:
    """``tts`` (the voice at ``tmp_path / voice.safetensors``) gives the oracle's audio
    for TEXT, greedy and with EOS out of play."""
    run = ref.generate(TEXT, voice_state, temperature=0.0, seed=0, eos_threshold=1e9)
    ours = tts.synthesize(
        TEXT,
        tts.voices.load(tmp_path / "voice.safetensors"),
        options=SpeakOptions(
            temperature=0.0, eos_threshold=1e9, normalize=False, output_chain=False
        ),
    )
    assert ours.shape == run.audio.shape
    assert np.abs(ours - run.audio).max() <= 1e-4
    assert np.abs(run.audio).max() > 1e-3


DEEP = "english_2026-09_24l"


def test_24_layer_config_at_its_real_depth(tmp_path: Path) -> None:
    config = shrunk(DEEP, keep_depth=True)
    assert config["flow_lm"]["transformer"]["num_layers"] == 24
    ref = build_reference(config, 7, tmp_path / "ref")
    ref.build_pack(tmp_path / "pack")
    voice_state = ref.voice_state_from_audio(synthetic_voice_audio(seconds=1.5), 24_000)
    assert len(voice_state) >= 24
    ref.export_voice(voice_state, tmp_path / "voice.safetensors")
    run = ref.generate(TEXT, voice_state, temperature=0.0, seed=0, eos_threshold=1e9)
    tts = PocketTTS.open(runtime="onnx", model_dir=tmp_path / "pack")
    voice = tts.voices.load(tmp_path / "voice.safetensors")
    assert voice.num_layers == 24
    frames = list(
        tts.stream(
            TEXT,
            voice,
            options=SpeakOptions(
                temperature=0.0, eos_threshold=1e9, normalize=False, output_chain=False
            ),
        )
    )
    latents = np.stack([f.latent for f in frames])
    expected = np.concatenate([c.latents[: c.emitted_frames] for c in run.chunks])
    assert latents.shape == expected.shape
    assert np.abs(latents - expected).max() <= 1e-4
    ours = np.concatenate([f.audio for f in frames])
    assert ours.shape == run.audio.shape
    assert np.abs(ours - run.audio).max() <= 1e-4
    assert np.abs(run.audio).max() > 1e-3
