"""The CoreML runtime on real Core ML model specs (coremltools), and on Core ML itself on a Mac.

On Linux coremltools builds, saves and reads models but cannot predict, so
the runtime opens these with ``load=False``: everything up to the first
prediction (names, shapes, dtypes, FluidAudio's output discovery, contract
checks) runs on the real specs. Tests that predict are marked ``macos``.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.support.paths import DATA

pytest.importorskip("coremltools", reason="coremltools has no wheel for this platform")

from pocketcli.config import ModelConfig  # noqa: E402
from pocketcli.options import SpeakOptions
from pocketcli.packs.checkpoint import read_checkpoint  # noqa: E402
from pocketcli.packs.manifest import PackError  # noqa: E402
from pocketcli.runtimes.coreml import CoreMLRuntime, coreml_factory  # noqa: E402
from pocketcli.runtimes.coreml.predictor import (  # noqa: E402
    CoreMLPredictor,
    coreml_unavailable_reason,
    descs_from_metadata,
)
from tests.support.coreml_specs import build_gpu_specs, metadata_json, save_mlpackage  # noqa: E402
from tests.support.twins.fluid_twins import write_constants_bin  # noqa: E402

TOKENIZER = DATA / "tokenizer-en" / "tokenizer.model"
_REASON = coreml_unavailable_reason()


@pytest.fixture(scope="module")
def config(fixture_dir: Path) -> ModelConfig:
    return ModelConfig.from_yaml(fixture_dir / "config.yaml")


def _constants(fixture_dir: Path, config: ModelConfig, pack: Path) -> None:
    write_constants_bin(
        read_checkpoint(fixture_dir / "model.safetensors"),
        config,
        TOKENIZER,
        pack,
        voices={"alba": fixture_dir / "voice.safetensors"},
    )


@pytest.fixture(scope="module")
def spec_pack(fixture_dir, config, tmp_path_factory) -> Path:
    pack = tmp_path_factory.mktemp("specs") / "v2.1" / "english"
    pack.mkdir(parents=True)
    build_gpu_specs(pack, config)
    _constants(fixture_dir, config, pack)
    return pack


def test_runtime_reads_names_shapes_and_dtypes_from_real_specs(spec_pack, config) -> None:
    runtime = CoreMLRuntime(spec_pack, predictor_factory=coreml_factory(load=False), config=config)
    models = runtime._models
    assert (models.slots, models.rows) == (512, 256)
    assert models.cond_keys.caches == (
        "new_cache_1_internal_tensor_assign_2",
        "new_cache_internal_tensor_assign_2",
    )
    assert models.cond_keys.positions == ("var_445", "var_864")
    assert models.flowlm_keys.positions == ("var_458", "var_877")
    assert (models.flowlm_keys.hidden, models.flowlm_keys.eos) == ("var_2570", "var_2582")
    assert models.flow_output == "latent_final"
    flow_inputs = {d.name: d.dtype for d in models.flow_decoder.inputs}
    assert flow_inputs == {"transformer_out": "float16", "latent_init": "float16"}
    keys = models.mimi_keys
    assert keys.audio == "var_9999"
    assert keys.states["conv0_first"] == "conv0_first"
    assert keys.states["res0_conv1_prev"] == "res0_conv1_prev"  # [1, 16, 0]
    assert keys.states["attn0_cache"] == "var_423"  # 2nd state, by number
    assert keys.states["conv_final_prev"] == f"var_{400 + 23 * 20}"
    assert len(keys.states) == 22
    with pytest.raises(Exception, match="inspection only|macOS"):
        runtime._models.flowlm.predict({})


def test_a_spec_with_a_wrong_shape_is_rejected(spec_pack, config, tmp_path) -> None:
    pack = tmp_path / "v2.1" / "english"
    shutil.copytree(spec_pack, pack)
    shutil.rmtree(pack / "cond_prefill.mlpackage")
    build_gpu_specs(pack, config, head_dim_override=8, only=("cond_prefill",))
    with pytest.raises(PackError) as info:
        CoreMLRuntime(pack, predictor_factory=coreml_factory(load=False), config=config)
    message = str(info.value)
    assert message == (
        "cond_prefill.mlpackage: input 'cache1' has shape [2, 1, 512, 4, 8],"
        " expected [2, 1, 512, 4, 16] for a 2-layer model with 4 KV heads of 16"
    )


def test_compiled_bundles_are_described_by_metadata_json(spec_pack, config, tmp_path) -> None:
    """``.mlmodelc`` directories: the runtime reads only metadata.json before loading."""
    pack = tmp_path / "v2.1" / "english"
    shutil.copytree(spec_pack / "constants_bin", pack / "constants_bin")
    for package in spec_pack.glob("*.mlpackage"):
        spec = CoreMLPredictor(package, load=False)
        bundle = pack / f"{package.stem}.mlmodelc"
        bundle.mkdir()
        (bundle / "metadata.json").write_text(metadata_json(spec.inputs, spec.outputs))
    runtime = CoreMLRuntime(pack, predictor_factory=coreml_factory(load=False), config=config)
    assert runtime._models.flowlm.label == "flowlm_step.mlmodelc"
    assert runtime._models.flowlm_keys.hidden == "var_2570"
    inputs, outputs = descs_from_metadata(pack / "flow_decoder_fused.mlmodelc" / "metadata.json")
    assert [(d.name, d.shape, d.dtype) for d in outputs] == [("latent_final", (1, 32), "float16")]


def test_metadata_json_flexible_and_broken(tmp_path) -> None:
    path = tmp_path / "metadata.json"
    path.write_text(
        '[{"inputSchema": [{"name": "x", "type": "MultiArray", "dataType": "Float32",'
        ' "shape": "[1, 4]", "hasShapeFlexibility": "1"}], "outputSchema": []}]'
    )
    (x,), () = descs_from_metadata(path)
    assert (x.name, x.shape, x.dtype) == ("x", None, "float32")
    path.write_text("{}")
    with pytest.raises(PackError, match="cannot read the model description"):
        descs_from_metadata(path)


@pytest.mark.macos
@pytest.mark.skipif(_REASON is not None, reason=f"needs Core ML: {_REASON}")
def test_core_ml_predicts_and_converts_dtypes(tmp_path) -> None:
    from coremltools.converters.mil import Builder as mb

    path = save_mlpackage(
        tmp_path / "m.mlpackage",
        {"x": ((1, 4), "fp16")},
        lambda v: [mb.mul(x=v["x"], y=np.float16(2.0), name="y")],
    )
    model = CoreMLPredictor(path, "CPU_ONLY")
    out = model.predict({"x": np.arange(4, dtype=np.float32).reshape(1, 4)})
    np.testing.assert_allclose(np.asarray(out["y"], np.float32), [[0, 2, 4, 6]])


@pytest.mark.macos
@pytest.mark.skipif(
    _REASON is not None or not os.environ.get("POCKETTTS_COREML_PACK"),
    reason="needs Core ML and POCKETTTS_COREML_PACK=<.../v2.1/english>",
)
def test_a_real_fluidaudio_pack_speaks() -> None:
    from pocketcli import PocketTTS

    pack = Path(os.environ["POCKETTTS_COREML_PACK"])
    tts = PocketTTS.open(
        model_dir=pack,
        runtime="coreml",
        compute_units=os.environ.get("POCKETTTS_COMPUTE_UNITS", "default"),
    )
    audio = tts.synthesize(
        "Hello from Core ML.",
        tts.runtime.load_voice("alba"),
        options=SpeakOptions(seed=1, output_chain=False),
    )
    assert audio.size > 0 and np.isfinite(audio).all() and np.abs(audio).max() > 0.01
    assert sys.platform == "darwin"
