"""Every config pocket-tts 4.0.1 ships exports to a KevinAHM v2 bundle that speaks as the oracle.

The configs are shrunk as in test_every_config (same structures: GQA, z projection,
low-rank tables, every flow-head type, separate decoder SEANet and transformer,
512-d voice latents). Shrunk, the 27 configs have six distinct structures (checked
there); one of each runs here (all 27 passed once, in 290 s on a loaded machine), and
a 24-layer config at its real depth, where the manifests list layer 10 before layer 2.
Loading the bundle checks both manifests against the graphs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("pocket_tts")

from pocketcli import PocketTTS  # noqa: E402
from pocketcli.config import ModelConfig  # noqa: E402
from pocketcli.packs.kevinahm.export import export_bundle  # noqa: E402
from tests.oracle.test_every_config import (  # noqa: E402
    STRUCTURES,
    assert_speaks_as_the_oracle,
    shrunk,
)
from tests.support.reference import TOKENIZER_MODEL, build_reference, synthetic_voice_audio  # noqa: E402

pytestmark = pytest.mark.oracle


@pytest.mark.parametrize(
    ("name", "keep_depth"), [(n, False) for n in STRUCTURES] + [("french_24l", True)]
)
def test_config_exports_a_bundle_that_matches_the_oracle(
    name: str, keep_depth: bool, tmp_path: Path
) -> None:
    config = shrunk(name, keep_depth=keep_depth)
    ref = build_reference(config, 5, tmp_path / "ref")
    bundle = export_bundle(
        tmp_path / "ref" / "model.safetensors",
        ModelConfig.from_dict(config),
        TOKENIZER_MODEL,
        tmp_path / "bundle",
        name,
        ("fp32",),
    )
    voice_state = ref.voice_state_from_audio(synthetic_voice_audio(seconds=1.5), 24_000)
    ref.export_voice(voice_state, tmp_path / "voice.safetensors")
    tts = PocketTTS.open(runtime="onnx", model_dir=bundle)
    layers = config["flow_lm"]["transformer"]["num_layers"]
    assert tts.runtime.config.flow_lm.transformer.num_layers == layers
    assert_speaks_as_the_oracle(ref, voice_state, tts, tmp_path)
