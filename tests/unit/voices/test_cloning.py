"""Cloning and voice files on the committed tiny pack, without torch.

The fixture holds a real speech clip resampled to 24 kHz by pocket-tts, the
voice state pocket-tts cloned from it and audio it spoke with that voice
(scripts/make_fixture_pack.py), so our whole cloning path is checked against
the oracle's numbers on machines without torch.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from safetensors.numpy import load_file, save_file

from pocketcli import PocketTTS
from pocketcli.config import ModelConfig
from pocketcli.options import SpeakOptions
from pocketcli.packs.builder import build_pack
from pocketcli.packs.checkpoint import read_checkpoint
from pocketcli.packs.encoder_weights import encoder_shapes
from pocketcli.packs.manifest import PackManifest
from pocketcli.packs.mimi_encoder_graph import encoder_weight_keys
from pocketcli.voices.cloning import VoiceCloningUnavailable
from pocketcli.voices.files import BIN_MAX_FRAMES, load_voice_file, write_conditioning_bin
from pocketcli.voices.prompt import VoiceWarning
from pocketcli.voices.state import VoiceError, VoiceState, load_voice_state, save_voice_state

TOLERANCE = 1e-4


@pytest.fixture(scope="module")
def tts(pack_dir: Path) -> PocketTTS:
    return PocketTTS.open(runtime="onnx", model_dir=pack_dir)


@pytest.fixture(scope="module")
def cloned(tts: PocketTTS, fixture_dir: Path, reference: dict) -> VoiceState:
    return tts.voices.clone(fixture_dir / reference["clone"]["prompt"])


def _assert_same_state(a: VoiceState, b: VoiceState, tolerance: float = TOLERANCE) -> None:
    assert a.num_layers == b.num_layers and a.length == b.length
    for x, y in zip(a.keys + a.values, b.keys + b.values, strict=True):
        assert x.shape == y.shape
        assert np.abs(x - y).max() <= tolerance


def test_cloned_state_equals_the_oracle(cloned, fixture_dir, reference) -> None:
    oracle = load_voice_state(fixture_dir / reference["clone"]["voice"])
    assert cloned.length > 20  # ~2.2 s of speech: frames + bos_before_voice
    _assert_same_state(cloned, oracle)
    assert cloned.conditioning.shape == (cloned.length - 1, 64)


def test_audio_from_the_clone_equals_the_oracle(tts, cloned, fixture_dir, reference) -> None:
    audio = tts.synthesize(
        reference["clone"]["text"],
        cloned,
        options=SpeakOptions(temperature=0.0, output_chain=False),
    )
    expected = np.load(fixture_dir / reference["clone"]["audio"])
    assert audio.shape == expected.shape
    assert np.abs(audio - expected).max() <= TOLERANCE
    assert np.abs(expected).max() > 0.01


def test_array_input_equals_file_input(tts, cloned, fixture_dir, reference) -> None:
    samples, rate = sf.read(fixture_dir / reference["clone"]["prompt"], dtype="float32")
    again = tts.voices.clone(samples, rate)
    _assert_same_state(again, cloned, 0.0)
    with pytest.raises(ValueError, match="sample_rate"):
        tts.voices.clone(samples)


def test_bin_round_trip(tts, cloned, tmp_path) -> None:
    path = tmp_path / "voice.bin"
    tts.voices.save(cloned, path)
    frames = cloned.conditioning.shape[0]
    assert path.stat().st_size == frames * 64 * 4
    raw = np.fromfile(path, "<f4").reshape(frames, 64)
    assert np.array_equal(raw, cloned.conditioning)
    loaded = tts.voices.load(path)
    _assert_same_state(loaded, cloned, 0.0)
    tts.voices.save(loaded, tmp_path / "again.bin")  # a .bin voice keeps its frames
    assert (tmp_path / "again.bin").read_bytes() == path.read_bytes()
    assert not list(tmp_path.glob(".*part"))


def test_safetensors_round_trip(tts, cloned, tmp_path) -> None:
    path = tmp_path / "voice.safetensors"
    tts.voices.save(cloned, path)
    loaded = tts.voices.load(path)
    _assert_same_state(loaded, cloned, 0.0)
    assert loaded.conditioning is None
    with pytest.raises(VoiceError, match="save it as .safetensors"):
        tts.voices.save(loaded, tmp_path / "no.bin")
    with pytest.raises(VoiceError, match="unknown voice file type '.npy'"):
        tts.voices.save(cloned, tmp_path / "voice.npy")


def test_long_conditioning_is_cut_to_125_frames(tmp_path) -> None:
    cond = np.random.default_rng(0).standard_normal((130, 64)).astype(np.float32)
    path = tmp_path / "long.bin"
    with pytest.warns(VoiceWarning, match="kept the first 125 of 130"):
        assert write_conditioning_bin(cond, path) == BIN_MAX_FRAMES
    assert np.array_equal(np.fromfile(path, "<f4").reshape(-1, 64), cond[:BIN_MAX_FRAMES])


@pytest.mark.parametrize(
    "data, message",
    [
        (b"", "invalid voice file size 0 bytes"),
        (b"\x00" * (64 * 4 * 3 + 8), "invalid voice file size 776 bytes"),
        (np.zeros((126, 64), "<f4").tobytes(), "too large: 126 frames, at most 125"),
        (np.full((2, 64), np.nan, "<f4").tobytes(), "NaN or infinite"),
    ],
)
def test_bad_bin_files_are_refused(tts, tmp_path, data: bytes, message: str) -> None:
    path = tmp_path / "bad.bin"
    path.write_bytes(data)
    with pytest.raises(VoiceError, match=message):
        tts.voices.load(path)


def test_a_voice_for_another_model_size_names_the_mismatch(tts, tmp_path) -> None:
    rng = np.random.default_rng(1)
    layers = tuple(rng.standard_normal((5, 4, 16)).astype(np.float32) for _ in range(24))
    path = tmp_path / "big.safetensors"
    save_voice_state(VoiceState(layers, layers), path)
    with pytest.raises(VoiceError, match="voice state has 24 layers but the model has 2"):
        load_voice_file(path, tts.runtime)
    heads = tuple(rng.standard_normal((5, 8, 8)).astype(np.float32) for _ in range(2))
    save_voice_state(VoiceState(heads, heads), path)
    with pytest.raises(VoiceError, match=r"heads x head_dim \[8, 8\]"):
        tts.voices.load(path)
    int_cache = {
        "transformer.layers.0.self_attn/cache": np.zeros((2, 1, 3, 4, 16), np.int32),
        "transformer.layers.0.self_attn/offset": np.array([3], np.int64),
    }
    save_file(int_cache, str(path))
    with pytest.raises(VoiceError, match="dtype int32"):
        tts.voices.load(path)


def test_encoder_shapes_match_the_checkpoint(fixture_dir) -> None:
    weights = read_checkpoint(fixture_dir / "model.safetensors")
    cfg = ModelConfig.from_yaml(fixture_dir / "config.yaml")
    shapes = encoder_shapes(cfg)
    assert sorted(shapes) == encoder_weight_keys(weights)
    assert all(tuple(weights[k].shape) == s for k, (s, _) in shapes.items())


def _pack_without_cloning(fixture_dir: Path, out: Path, how: str) -> Path:
    weights = load_file(str(fixture_dir / "model.safetensors"))
    if how == "zeroed":  # what Kyutai's "without voice cloning" file holds
        weights = {
            k: (np.zeros_like(v) if k.startswith("mimi.encoder") else v) for k, v in weights.items()
        }
    elif how == "matrices":  # zeroed weights, norms and biases left as they were
        weights = {
            k: (np.zeros_like(v) if k.startswith("mimi.encoder") and v.ndim >= 2 else v)
            for k, v in weights.items()
        }
    elif how == "projection":  # pocket-tts's own initial value of speaker_proj_weight
        weights["flow_lm.speaker_proj_weight"] = np.zeros_like(
            weights["flow_lm.speaker_proj_weight"]
        )
    else:
        weights = {k: v for k, v in weights.items() if not k.startswith("mimi.encoder.")}
    save_file(weights, str(out / "model.safetensors"))
    cfg = ModelConfig.from_yaml(fixture_dir / "config.yaml")
    build_pack(
        out / "model.safetensors", cfg, fixture_dir / "pack" / "tokenizer.model", out / "pack"
    )
    return out / "pack"


@pytest.mark.parametrize(
    "how, reason",
    [
        ("zeroed", "SEANet encoder and encoder transformer weights are all zero"),
        ("matrices", "SEANet encoder and encoder transformer weights are all zero"),
        ("projection", "speaker projection weights are all zero"),
        ("missing", "has no SEANet encoder weights"),
    ],
)
def test_pack_without_cloning_weights_says_so(fixture_dir, tmp_path, how, reason) -> None:
    pack = _pack_without_cloning(fixture_dir, tmp_path, how)
    manifest = PackManifest.read(pack)
    assert manifest.voice_cloning is False and reason in manifest.voice_cloning_note
    assert "mimi_encoder" not in manifest.graphs["fp32"]
    tts = PocketTTS.open(runtime="onnx", model_dir=pack)
    assert not tts.voices.cloning_available
    with pytest.raises(VoiceCloningUnavailable) as info:
        tts.voices.clone(np.zeros(48_000, np.float32), 24_000)
    message = str(info.value)
    assert "kyutai/pocket-tts" in message and "accept its terms" in message
    assert "hf auth login" in message and reason in message and "\n" not in message


def test_int8_pack_clones_with_the_fp32_encoder(pack_dir, cloned, fixture_dir, reference):
    """int8 packs share the fp32 encoder graph; only the FlowLM prefill is quantised."""
    manifest = PackManifest.read(pack_dir)
    assert manifest.graphs["int8"]["mimi_encoder"] == manifest.graphs["fp32"]["mimi_encoder"]
    int8 = PocketTTS.open(runtime="onnx", model_dir=pack_dir, precision="int8")
    voice = int8.voices.clone(fixture_dir / reference["clone"]["prompt"])
    assert np.array_equal(voice.conditioning, cloned.conditioning)
    assert voice.length == cloned.length
    assert all(np.isfinite(k).all() for k in voice.keys + voice.values)


def test_api_notices_are_python_warnings_without_a_callback(tts, tmp_path) -> None:
    t = np.arange(32 * 16_000) / 16_000
    audio = (0.3 * np.sin(2 * np.pi * 180 * t) * (0.6 + 0.4 * np.sin(6 * t))).astype(np.float32)
    with pytest.warns(VoiceWarning, match="32.0 s long: only its first 30 s") as caught:
        voice = tts.voices.clone(audio, 16_000)
    assert caught[0].filename == __file__  # points at the caller
    assert voice.conditioning.shape[0] > BIN_MAX_FRAMES
    with pytest.warns(VoiceWarning, match=f"kept the first {BIN_MAX_FRAMES}"):
        tts.voices.save(voice, tmp_path / "v.bin")
    seen: list[str] = []
    tts.voices.save(voice, tmp_path / "w.bin", on_warning=seen.append)
    assert len(seen) == 1
