"""The CoreML runtime on ONNX twin packs built from the committed tiny model (no torch).

The oracle comparison is in tests/oracle/test_coreml_twins.py; here the twins are held
against our own ONNX pack of the same weights (run at the fused decoder's 8
steps) and every pack-reading rule is exercised: placements, precisions,
prefill windows, constants_bin validation, Mimi initial state, voices,
cloning encoders, capacity and platform errors.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from pocketcli import PocketTTS
from pocketcli.api import open_request
from pocketcli.config import ModelConfig
from pocketcli.errors import UserError
from pocketcli.options import ModelRequest, SpeakOptions
from pocketcli.packs.checkpoint import read_checkpoint
from pocketcli.packs.manifest import PackError
from pocketcli.runtimes.coreml import CoreMLRuntime, CoreMLUnavailable
from pocketcli.voices.state import VoiceError
from tests.support.paths import DATA
from tests.support.snr import snr_db
from tests.support.twins.fluid_twins import build_twin_pack
from tests.support.twins.onnx_predictor import onnx_factory

TOKENIZER = DATA / "tokenizer-en" / "tokenizer.model"
TEXT = "Hello world. This is a test of chunks, spoken one frame at a time."


@pytest.fixture(scope="module")
def config(fixture_dir: Path) -> ModelConfig:
    return ModelConfig.from_yaml(fixture_dir / "config.yaml")


@pytest.fixture(scope="module")
def twin(fixture_dir: Path, config: ModelConfig, tmp_path_factory) -> Path:
    """gpu + ane, fp16 + int8, pack encoder, the fixture voice as ``alba``."""
    pack = tmp_path_factory.mktemp("twin") / "v2.1" / "english"
    return build_twin_pack(
        fixture_dir / "model.safetensors",
        config,
        TOKENIZER,
        pack,
        placements=("gpu", "ane"),
        precisions=("fp16", "int8"),
        voices={"alba": fixture_dir / "voice.safetensors"},
    )


def _copy(twin: Path, tmp_path: Path) -> Path:
    pack = tmp_path / "v2.1" / "english"
    shutil.copytree(twin, pack)
    return pack


def _runtime(pack: Path, config: ModelConfig, **kwargs) -> CoreMLRuntime:
    return CoreMLRuntime(pack, predictor_factory=onnx_factory(), config=config, **kwargs)


def _speak(runtime: CoreMLRuntime, **kwargs) -> np.ndarray:
    tts = PocketTTS(runtime, runtime.tokenizer_path, runtime.tokenizer_kind)
    return tts.synthesize(
        TEXT,
        runtime.load_voice("alba"),
        SpeakOptions(
            temperature=0.0, max_tokens=10, eos_threshold=1e9, output_chain=False, **kwargs
        ),
    )


@pytest.fixture(scope="module")
def reference_audio(pack_dir: Path, voice_path: Path) -> np.ndarray:
    """Our ONNX pack of the same weights at 8 LSD steps (what flow_decoder_fused bakes in)."""
    tts = PocketTTS.open(runtime="onnx", model_dir=pack_dir)
    return tts.synthesize(
        TEXT,
        tts.voices.load(voice_path),
        options=SpeakOptions(
            temperature=0.0, max_tokens=10, eos_threshold=1e9, decode_steps=8, output_chain=False
        ),
    )


@pytest.mark.parametrize("placement", ["gpu", "ane"])
def test_fp16_twins_speak_like_our_onnx_pack(twin, config, reference_audio, placement) -> None:
    audio = _speak(_runtime(twin, config, placement=placement))
    assert audio.shape == reference_audio.shape
    assert np.abs(audio - reference_audio).max() <= 1e-4
    assert np.abs(reference_audio).max() > 0.01


def test_mimi_twin_decodes_like_our_decoder_past_the_ring(twin, config, pack_dir) -> None:
    """40 frames: the 256-slot attention ring wraps 2.5 times; the window must stay exact.

    Audio through the tiny model's small LayerScale hides attention errors
    below 1e-4 (a context of 240 instead of 250 moves it by 4e-5), so the
    decoders are compared alone and tightly.
    """
    from pocketcli.runtimes.onnx import OnnxRuntime

    ours, reference = _runtime(twin, config), OnnxRuntime(pack_dir)
    latents = 2 * np.random.default_rng(0).standard_normal((40, 32)).astype(np.float32)
    a_state, b_state = ours.start_decoder(), reference.start_decoder()
    a = np.concatenate([ours.decode(a_state, row[None]) for row in latents])
    b = np.concatenate([reference.decode(b_state, row[None]) for row in latents])
    assert np.abs(b).max() > 0.1
    assert np.abs(a - b).max() <= 1e-6
    assert a_state.feeds["attn0_offset"][0] == 40 * 16


def test_decode_steps_cannot_change_the_baked_decoder(twin, config, reference_audio) -> None:
    runtime = _runtime(twin, config)
    assert runtime.decode_steps == 8
    assert np.abs(_speak(runtime, decode_steps=1) - reference_audio).max() <= 1e-4


def test_int8_picks_flowlm_stepv2(twin, config, reference_audio, tmp_path) -> None:
    runtime = _runtime(twin, config, precision="int8")
    assert runtime._models.flowlm.label == "flowlm_stepv2.onnx"
    audio = _speak(runtime)
    assert audio.shape == reference_audio.shape
    # int8 weights: close, not equal. Measured 90.2 dB on x86-64 (only the FlowLM step
    # is int8, with FluidAudio's per-channel scales); 30 dB of margin.
    assert 60.0 <= snr_db(reference_audio, audio) < 120
    pack = _copy(twin, tmp_path)
    (pack / "flowlm_stepv2.onnx").unlink()
    with pytest.raises(PackError, match="flowlm_stepv2"):
        _runtime(pack, config, precision="int8")


def test_prefill_in_several_conditioner_calls(
    fixture_dir, config, reference_audio, tmp_path
) -> None:
    """valid_len and padding: 8-row prefill windows give the same audio as 256-row ones."""
    pack = build_twin_pack(
        fixture_dir / "model.safetensors",
        config,
        TOKENIZER,
        tmp_path / "v2.1" / "english",
        placements=("gpu", "ane"),
        voices={"alba": fixture_dir / "voice.safetensors"},
        encoder=None,
        prefill_rows=8,
    )
    for placement in ("gpu", "ane"):
        runtime = _runtime(pack, config, placement=placement)
        assert runtime._models.rows == 8
        assert np.abs(_speak(runtime) - reference_audio).max() <= 1e-4


def test_voice_round_trips_through_the_caches(twin, config, voice_path) -> None:
    from pocketcli.voices.state import load_voice_state

    runtime = _runtime(twin, config)
    voice = runtime.load_voice("alba")
    seq = runtime.start_sequence(voice, 10)
    assert seq.length == voice.length
    back = runtime.voice_state(seq)
    original = load_voice_state(voice_path)
    for a, b in zip(back.keys + back.values, original.keys + original.values, strict=True):
        assert np.array_equal(a, b)


def test_a_chunk_must_fit_the_512_slots(twin, config) -> None:
    runtime = _runtime(twin, config)
    assert runtime.max_positions == 512
    voice = runtime.load_voice("alba")
    runtime.start_sequence(voice, 512 - voice.length)
    with pytest.raises(UserError, match="hold 512"):
        runtime.start_sequence(voice, 513 - voice.length)


def test_voice_names_are_checked(twin, config) -> None:
    runtime = _runtime(twin, config)
    with pytest.raises(VoiceError, match="invalid voice name"):
        runtime.load_voice("../alba")
    with pytest.raises(VoiceError, match="not in"):
        runtime.load_voice("javert")


@pytest.mark.parametrize(
    ("file", "size", "message"),
    [
        ("text_embed_table.bin", 64 * 4 * 10 + 4, "multiple of 64"),
        ("bos_emb.bin", 31 * 4, "expected 32"),
        ("bos_before_voice.bin", 65 * 4, "expected 64"),
        ("bos_emb.bin", 32 * 4 + 2, "not a whole number"),
    ],
)
def test_constants_sizes_are_checked(twin, config, tmp_path, file, size, message) -> None:
    pack = _copy(twin, tmp_path)
    (pack / "constants_bin" / file).write_bytes(b"\0" * size)
    with pytest.raises(PackError, match=message):
        _runtime(pack, config)


def test_missing_tokenizer_or_model_is_named(twin, config, tmp_path) -> None:
    pack = _copy(twin, tmp_path)
    (pack / "constants_bin" / "tokenizer.model").unlink()
    with pytest.raises(PackError, match="tokenizer.model is missing"):
        _runtime(pack, config)
    pack = _copy(twin, tmp_path / "b")
    (pack / "mimi_decoder.onnx").unlink()
    with pytest.raises(PackError, match="mimi_decoder"):
        _runtime(pack, config)


def test_mimi_initial_state_is_read_when_its_size_fits(fixture_dir, config, tmp_path) -> None:
    conv0 = np.arange(64 * 6, dtype=np.float32).reshape(1, 64, 6) / 100
    pack = build_twin_pack(
        fixture_dir / "model.safetensors",
        config,
        TOKENIZER,
        tmp_path / "v2.1" / "english",
        encoder=None,
        mimi_init_state={"conv0_prev": conv0, "conv_final_prev": np.ones(5, np.float32)},
    )
    state = _runtime(pack, config).start_decoder()
    assert np.array_equal(state.feeds["conv0_prev"], conv0)
    assert not state.feeds["conv_final_prev"].any()  # wrong size: ignored, zeros
    assert len(state.feeds) == 22  # tiny Mimi: 1 attention layer


def test_coreml_needs_macos(twin, config) -> None:
    if sys.platform == "darwin":
        pytest.skip("checks the message shown off macOS")
    with pytest.raises(CoreMLUnavailable) as info:
        CoreMLRuntime(twin, config=config)
    message = str(info.value)
    assert "\n" not in message and "macOS" in message and "use the onnx runtime" in message


def test_bad_flags_are_user_errors(twin, config) -> None:
    with pytest.raises(UserError, match="unknown placement"):
        _runtime(twin, config, placement="npu")
    with pytest.raises(UserError, match="not published"):
        _runtime(twin, config, placement="ane-state")
    with pytest.raises(UserError, match="unknown CoreML precision"):
        _runtime(twin, config, precision="fp32")
    with pytest.raises(UserError, match="unknown compute units"):
        _runtime(twin, config, compute_units="gpu-only")


def test_bundled_config_is_found_by_pack_name(twin) -> None:
    with pytest.raises(PackError, match="no model config for a pack named 'v2.1'"):
        CoreMLRuntime(twin.parent, predictor_factory=onnx_factory())
    # english.yaml is found, and its d_model 1024 does not fit the tiny pack's table.
    with pytest.raises(PackError, match="text_embed_table.bin .* multiple of 1024"):
        CoreMLRuntime(twin, predictor_factory=onnx_factory())


def test_cloning_uses_the_pack_encoder_on_10_seconds(twin, config, pack_dir) -> None:
    runtime = _runtime(twin, config)
    assert runtime.cloning_unavailable_reason is None
    rng = np.random.default_rng(0)
    audio = (0.1 * rng.standard_normal(24_000 * 12)).astype(np.float32)
    cond = runtime.encode_voice(audio)
    assert cond.shape == (125, 64)  # 12 s cut to 10 s
    short = runtime.encode_voice(audio[: 24_000 * 3 + 5])
    assert short.shape == (38, 64)  # ceil(72005 / 1920)
    # Causal encoder: the 37 frames the short prompt covers whole are the long one's.
    np.testing.assert_allclose(short[:37], cond[:37], atol=1e-5)


def test_cloning_falls_back_to_the_root_encoder(fixture_dir, config, tmp_path) -> None:
    w = read_checkpoint(fixture_dir / "model.safetensors")
    proj = w["flow_lm.speaker_proj_weight"]  # [d_model, latent]
    plain = build_twin_pack(
        fixture_dir / "model.safetensors",
        config,
        TOKENIZER,
        tmp_path / "a" / "v2.1" / "english",
        encoder="pack",
    )
    root = build_twin_pack(
        fixture_dir / "model.safetensors",
        config,
        TOKENIZER,
        tmp_path / "b" / "v2.1" / "english",
        encoder="root",
        speaker_proj=True,
        recover_pinv=np.linalg.pinv(proj.T),
    )
    audio = (0.1 * np.random.default_rng(1).standard_normal(24_000 * 2)).astype(np.float32)
    expected = _runtime(plain, config).encode_voice(audio)
    runtime = _runtime(root, config)
    assert runtime._voice_encoder().model.label == "mimi_encoderv2.onnx"
    # pinv of the projection, then the projection: the same conditioning back.
    np.testing.assert_allclose(runtime.encode_voice(audio), expected, atol=1e-4)
    none = build_twin_pack(
        fixture_dir / "model.safetensors",
        config,
        TOKENIZER,
        tmp_path / "c" / "v2.1" / "english",
        encoder=None,
    )
    reason = _runtime(none, config).cloning_unavailable_reason
    assert reason is not None and "mimi_encoderv2" in reason


def test_coreml_opens_through_the_registry_into_a_working_api(twin, config) -> None:
    request = ModelRequest(
        model_dir=twin, runtime="coreml", placement="ane", compute_units="no-ane"
    )
    tts = open_request(request, need_here=False, predictor_factory=onnx_factory(), config=config)
    assert tts.runtime.compute_units["flow_decoder"] == "CPU_AND_GPU"
    assert tts.language == "english"  # from the pack's directory name
    frames = list(
        tts.stream(
            "Hi there.",
            tts.runtime.load_voice("alba"),
            options=SpeakOptions(temperature=0.0, output_chain=False),
        )
    )
    assert frames and all(f.audio.shape == (1920,) for f in frames)
