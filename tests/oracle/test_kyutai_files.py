"""Kyutai's real file types against the oracle: BF16/F16 checkpoints and every voice format.

The oracle (pocket-tts 4.0.1) writes its random weights as BF16 (as Kyutai
releases them) or F16/F32 mixed, loads that file through its own
``TTSModel.load_model(config=...)``, and our pack built from the same file must
reproduce its ``generate_audio``. Voices: each published format, written from
the same numbers, must give the audio the oracle gives when prefilled with that
conditioning (``_run_flow_lm_and_increment_step(audio_conditioning=...)``) or
loaded as that state.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("pocket_tts")

import safetensors.torch  # noqa: E402

from pocketcli import PocketTTS  # noqa: E402
from pocketcli.engine.noise import InjectedNoise  # noqa: E402
from pocketcli.options import SpeakOptions  # noqa: E402
from pocketcli.packs.checkpoint import read_checkpoint  # noqa: E402
from tests.oracle.test_engine import MAX_TOKENS, TEXT, _compare, _ours  # noqa: E402
from tests.support import tensorfiles  # noqa: E402
from tests.support.reference import (  # noqa: E402
    TOKENIZER_MODEL,
    Reference,
    build_reference,
    make_config,
    synthetic_voice_audio,
)

pytestmark = pytest.mark.oracle

SHORT = "Hello world. Voices from every file."


@dataclass
class Setup:
    ref: Reference  # the oracle running the weights of the reduced-precision file
    full: Reference  # the float32 model the file was written from
    ours: PocketTTS
    voice_state: dict
    voice_path: Path


def _setup(tmp_path_factory, variant: str, dtype: str) -> Setup:
    root = tmp_path_factory.mktemp(f"{variant}-{dtype}")
    full = build_reference(make_config(variant, str(TOKENIZER_MODEL)), 13, root / "f32")
    ref = full.saved_as(dtype, root / dtype)
    ref.build_pack(root / "pack")
    voice_state = ref.voice_state_from_audio(synthetic_voice_audio(seconds=2.0), 24_000)
    voice_path = root / "voice.safetensors"
    ref.export_voice(voice_state, voice_path)
    return Setup(
        ref, full, PocketTTS.open(runtime="onnx", model_dir=root / "pack"), voice_state, voice_path
    )


@pytest.fixture(
    scope="module", params=[("tiny", "bf16"), ("narrow", "bf16"), ("tiny", "fp16-mixed")]
)
def setup(request, tmp_path_factory) -> Setup:
    return _setup(tmp_path_factory, *request.param)


def test_the_file_holds_reduced_precision_and_we_read_it_exactly(setup: Setup) -> None:
    from pocketcli.tensorfile import TensorFile

    with TensorFile(setup.ref.checkpoint_path) as f:
        dtypes = {info.dtype for info in f.tensors.values()}
    assert dtypes in ({"BF16"}, {"F16", "F32"})
    ours = read_checkpoint(setup.ref.checkpoint_path)
    theirs = setup.ref.model.state_dict()
    assert set(ours) == set(theirs)
    for name, value in ours.items():
        # Bit for bit the float32 the package's load_state_dict made of the file.
        assert np.array_equal(value, theirs[name].numpy()), name
    # ... and not the float32 weights the file was written from (the rounding is real).
    rounded = setup.full.model.state_dict()["flow_lm.input_linear.weight"].numpy()
    assert not np.array_equal(ours["flow_lm.input_linear.weight"], rounded)


def test_generate_audio_with_a_cloned_voice_and_injected_noise(setup: Setup) -> None:
    run = setup.ref.generate(
        TEXT,
        setup.voice_state,
        temperature=0.7,
        seed=3,
        max_tokens=MAX_TOKENS,
        frames_after_eos=2,
    )
    noise = [row for c in run.chunks for row in c.frame_noise[: c.emitted_frames]]
    frames, traces = _ours(
        setup.ours, setup.voice_path, noise=InjectedNoise(noise), frames_after_eos=2
    )
    _compare(run, frames, traces)


# --------------------------------------------------------------------------- voice formats


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Setup:
    return _setup(tmp_path_factory, "tiny", "bf16")


def _conditioning(frames: int, width: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((frames, width)).astype(np.float32)


def _bf16(a: np.ndarray) -> np.ndarray:
    return torch.from_numpy(a).to(torch.bfloat16).float().numpy()


def _ptvb1(path: Path, voices: dict[str, dict[str, np.ndarray]]) -> None:
    codes = {np.dtype("float32"): 0, np.dtype("int64"): 1}
    out = b"PTVB1" + struct.pack("<I", len(voices))
    for name, tensors in voices.items():
        out += struct.pack("<H", len(name)) + name.encode()
        out += struct.pack("<H", len(tensors))
        for key, value in tensors.items():
            data = np.ascontiguousarray(value).astype(value.dtype.newbyteorder("<")).tobytes()
            out += struct.pack("<H", len(key)) + key.encode()
            out += struct.pack("<BB", codes[value.dtype], value.ndim)
            out += struct.pack(f"<{value.ndim}I", *value.shape) + struct.pack("<I", len(data))
            out += data
    path.write_bytes(out)


def _state_tensors(state: dict, cast=None) -> dict[str, torch.Tensor]:
    out = {}
    for module, fields in state.items():
        for key, value in fields.items():
            value = value.detach().cpu().contiguous()
            if key == "cache" and cast is not None:
                value = value.to(cast)
            out[f"{module}/{key}"] = value
    return out


def _rounded_state(state: dict, dtype) -> dict:
    return {
        module: {
            key: (value.to(dtype).float() if key == "cache" else value.clone())
            for key, value in fields.items()
        }
        for module, fields in state.items()
    }


def _same_audio(tiny: Setup, voice, oracle_state: dict) -> None:
    run = tiny.ref.generate(SHORT, oracle_state, temperature=0.0, seed=0, max_tokens=MAX_TOKENS)
    audio = tiny.ours.synthesize(
        SHORT,
        voice,
        options=SpeakOptions(
            max_tokens=MAX_TOKENS, normalize=False, temperature=0.0, output_chain=False
        ),
    )
    assert audio.shape == run.audio.shape
    assert np.abs(audio - run.audio).max() <= 1e-4
    assert np.abs(run.audio).max() > 0.01


COND_FORMATS = ["audio_prompt-f32-3d", "audio_prompt-bf16-2d", "voices.bin", "npy", "fluidaudio"]


@pytest.mark.parametrize("kind", COND_FORMATS)
def test_conditioning_formats_match_the_oracle_prefill(tiny: Setup, tmp_path, kind) -> None:
    width = tiny.ours.runtime.config.flow_lm.transformer.d_model
    cond = _conditioning(17, width, seed=len(kind))
    name = None
    path = tmp_path / "voice.data"  # the name says nothing: the content decides
    if kind == "audio_prompt-f32-3d":
        safetensors.torch.save_file({"audio_prompt": torch.from_numpy(cond[None])}, str(path))
    elif kind == "audio_prompt-bf16-2d":
        tensor = torch.from_numpy(cond).to(torch.bfloat16)
        safetensors.torch.save_file({"audio_prompt": tensor}, str(path))
        cond = _bf16(cond)
    elif kind == "voices.bin":
        other = _conditioning(9, width, seed=99)
        path.write_bytes(tensorfiles.voices_bin({"first": other, "cosette": cond}))
        name = "cosette"
    elif kind == "npy":
        with open(path, "wb") as f:
            np.save(f, cond[None])
    else:
        cond.astype("<f4").tofile(path)
    voice = tiny.ours.voices.load(path, name)
    assert voice.conditioning is not None and np.array_equal(voice.conditioning, cond)
    _same_audio(tiny, voice, tiny.ref.voice_state_from_conditioning(cond))


@pytest.mark.parametrize("dtype", ["bf16", "fp16", "ptvb1"])
def test_voice_states_in_every_dtype_match_the_oracle(tiny: Setup, tmp_path, dtype) -> None:
    path = tmp_path / "state.bin"
    state = tiny.voice_state
    if dtype == "ptvb1":
        tensors = {k: v.numpy() for k, v in _state_tensors(state).items()}
        _ptvb1(path, {"mine": tensors, "other": tensors})
        voice = tiny.ours.voices.load(path, "mine")
        oracle_state = state
    else:
        torch_dtype = torch.bfloat16 if dtype == "bf16" else torch.float16
        safetensors.torch.save_file(_state_tensors(state, torch_dtype), str(path))
        voice = tiny.ours.voices.load(path)
        oracle_state = _rounded_state(state, torch_dtype)
    _same_audio(tiny, voice, oracle_state)


def test_audio_prompt_on_a_model_without_bos_before_voice(tmp_path) -> None:
    """Kyutai's 2026-01 model (whose voices are 'audio_prompt' files) has no
    bos_before_voice: the frames alone are prefilled."""
    config = make_config("tiny", str(TOKENIZER_MODEL))
    config["flow_lm"]["insert_bos_before_voice"] = False
    full = build_reference(config, 5, tmp_path / "f32")
    ref = full.saved_as("bf16", tmp_path / "bf16")
    assert not ref.model.flow_lm.insert_bos_before_voice
    tts = PocketTTS.open(runtime="onnx", model_dir=ref.build_pack(tmp_path / "pack"))
    cond = _conditioning(11, 64, seed=4)
    path = tmp_path / "prompt.safetensors"
    safetensors.torch.save_file({"audio_prompt": torch.from_numpy(cond[None])}, str(path))
    voice = tts.voices.load(path)
    assert voice.length == 11
    setup = Setup(ref, full, tts, {}, path)
    _same_audio(setup, voice, ref.voice_state_from_conditioning(cond))
