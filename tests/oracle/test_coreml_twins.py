"""The CoreML runtime's host code on ONNX twins of FluidAudio's models, against pocket-tts.

The oracle builds a random model and saves it in the released checkpoint
layout; ``build_twin_pack`` turns that file into a ``v2.1/<lang>/`` pack
whose models are ONNX twins of FluidAudio's Core ML ones (same names,
shapes, semantics). Our unchanged engine drives ``CoreMLRuntime`` over them
through ``OnnxPredictor``; the oracle runs with 8 LSD decode steps, what
``flow_decoder_fused`` bakes in. Voices go through ``constants_bin/`` (a
cloned voice exported by the oracle) and through the runtime's own clone
encoder.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("pocket_tts")

from pocketcli import PocketTTS  # noqa: E402
from pocketcli.api import open_request  # noqa: E402
from pocketcli.config import ModelConfig  # noqa: E402
from pocketcli.engine.chunk import ChunkTrace, Frame  # noqa: E402
from pocketcli.engine.noise import InjectedNoise  # noqa: E402
from pocketcli.options import ModelRequest, SpeakOptions  # noqa: E402
from tests.support.reference import (  # noqa: E402
    TOKENIZER_MODEL,
    Reference,
    ReferenceRun,
    build_reference,
    make_config,
    synthetic_voice_audio,
)
from tests.support.twins.fluid_twins import build_twin_pack  # noqa: E402
from tests.support.twins.onnx_predictor import onnx_factory  # noqa: E402

pytestmark = pytest.mark.oracle

TEXT = (
    "Hello world. This is the CoreML host code, one frame at a time. "
    "Long text is split into chunks! Does every chunk start afresh?"
)
MAX_TOKENS = 12  # several chunks
SHORT_TEXT = "Hello world. It ends here."
STEPS = 8  # flow_decoder_fused's baked Euler (LSD) steps
TOLERANCE = 1e-4


@dataclass
class Setup:
    ref: Reference
    voice_state: dict
    config: ModelConfig
    pack: Path


@pytest.fixture(scope="module", params=["tiny", "narrow"])
def setup(request, tmp_path_factory) -> Setup:
    root = tmp_path_factory.mktemp(f"coreml-{request.param}")
    ref = build_reference(make_config(request.param, str(TOKENIZER_MODEL)), 23, root / "ref")
    audio = synthetic_voice_audio(seconds=2.0, seed=3)
    voice_state = ref.voice_state_from_audio(audio, 24_000)
    ref.export_voice(voice_state, root / "clone.safetensors")
    config = ModelConfig.from_dict(ref.config)
    pack = build_twin_pack(
        ref.checkpoint_path,
        config,
        TOKENIZER_MODEL,
        root / "repo" / "v2.1" / "english",
        placements=("gpu", "ane"),
        voices={"clone": root / "clone.safetensors"},
    )
    return Setup(ref, voice_state, config, pack)


def _tts(s: Setup, placement: str = "gpu") -> PocketTTS:
    request = ModelRequest(model_dir=s.pack, runtime="coreml", placement=placement)
    return open_request(request, need_here=False, predictor_factory=onnx_factory(), config=s.config)


def _ours(
    tts: PocketTTS,
    text: str = TEXT,
    max_tokens: int = MAX_TOKENS,
    noise: InjectedNoise | None = None,
    **options,
) -> tuple[list[Frame], list[ChunkTrace]]:
    traces: list[ChunkTrace] = []
    voice = tts.runtime.load_voice("clone")  # constants_bin/clone.safetensors
    frames = list(
        tts.stream(
            text,
            voice,
            SpeakOptions(max_tokens=max_tokens, output_chain=False, **options),
            noise=noise,
            on_chunk=traces.append,
        )
    )
    return frames, traces


def _compare(
    run: ReferenceRun, frames: list[Frame], traces: list[ChunkTrace], min_chunks: int = 3
) -> None:
    assert len(traces) == len(run.chunks) >= min_chunks
    for index, (chunk, trace) in enumerate(zip(run.chunks, traces, strict=True)):
        assert list(trace.plan.token_ids) == chunk.token_ids
        assert trace.frames == chunk.emitted_frames, f"chunk {index}"
        n = len(trace.eos_logits)
        assert chunk.n_steps - 1 <= n <= chunk.n_steps
        np.testing.assert_allclose(trace.eos_logits, chunk.eos_logits[:n], atol=TOLERANCE)
        latents = np.stack([f.latent for f in frames if f.chunk_index == index])
        assert np.abs(latents - chunk.latents[: chunk.emitted_frames]).max() <= TOLERANCE
    audio = np.concatenate([f.audio for f in frames])
    assert audio.shape == run.audio.shape
    assert np.abs(audio - run.audio).max() <= TOLERANCE
    assert np.abs(run.audio).max() > 0.01  # not a comparison of silences


def test_gpu_twins_match_the_oracle_with_noise_and_eos(setup: Setup) -> None:
    run = setup.ref.generate(
        TEXT,
        setup.voice_state,
        temperature=0.7,
        seed=5,
        max_tokens=MAX_TOKENS,
        frames_after_eos=2,
        decode_steps=STEPS,
    )
    noise = [row for c in run.chunks for row in c.frame_noise[: c.emitted_frames]]
    frames, traces = _ours(_tts(setup), noise=InjectedNoise(noise), frames_after_eos=2)
    _compare(run, frames, traces)
    assert all(t.finished_on_eos for t in traces)


@pytest.mark.parametrize("setup", ["tiny"], indirect=True)
def test_ane_twins_match_the_oracle_over_full_length_chunks(setup: Setup) -> None:
    """EOS off: chunks outrun the Mimi attention ring (16 frames) and exercise BOS on the host."""
    run = setup.ref.generate(
        SHORT_TEXT,
        setup.voice_state,
        temperature=0.0,
        seed=0,
        max_tokens=6,
        eos_threshold=1e9,
        decode_steps=STEPS,
    )
    frames, traces = _ours(_tts(setup, "ane"), SHORT_TEXT, 6, temperature=0.0, eos_threshold=1e9)
    _compare(run, frames, traces, min_chunks=2)
    assert [t.frames for t in traces] == [t.plan.max_frames for t in traces]
    assert max(t.frames for t in traces) > 16


def test_clone_through_the_pack_encoder_matches_the_oracle_voice(setup: Setup) -> None:
    """mimi_encoderv3 + bos_before_voice + cond_prefill give the oracle's voice state."""
    tts = _tts(setup)
    assert tts.voices.cloning_available
    voice = tts.voices.clone(synthetic_voice_audio(seconds=2.0, seed=3), 24_000)
    layers = setup.voice_state
    caches = [layers[name]["cache"] for name in sorted(layers) if "cache" in layers[name]]
    assert len(caches) == setup.config.flow_lm.transformer.num_layers
    for i, cache in enumerate(caches):
        expected = cache[:, 0].numpy()
        assert voice.keys[i].shape == expected[0].shape
        assert np.abs(voice.keys[i] - expected[0]).max() <= TOLERANCE
        assert np.abs(voice.values[i] - expected[1]).max() <= TOLERANCE
