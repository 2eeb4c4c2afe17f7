"""Our exported bundle read by code that is not ours: pocketsynth (PyPI) over onnxvoice.

pocketsynth's generation differs from pocket-tts's in its EOS rule (it takes
``eos_logit > 0.5``, not ``> -4``) and in having no fade-in; both are kept out of
play: the tiny model's EOS logits stay below both thresholds for these frames
(asserted), both sides stop at the same frame budget, and the first 5 ms (our
fade-in) are compared after applying the fade to pocketsynth's samples. Noise
is pocketsynth's own: it draws ``np.random.standard_normal((1, 32)) *
sqrt(temperature)`` per frame from NumPy's global generator, which a
``RandomState`` with the same seed reproduces for our engine.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import soundfile as sf

from pocketcli.api import PocketTTS
from pocketcli.engine.chunk import FADE_IN_SECONDS
from pocketcli.options import SpeakOptions
from pocketcli.voices.cloning import voice_from_conditioning
from tests.support.bundlehelp import tiny_bundle

pocketsynth = pytest.importorskip(
    "pocketsynth",
    reason="pocketsynth is not installed (pip install pocketsynth: the test extra has it)",
)
from pocketsynth.config import GenerationConfig  # noqa: E402

TEMPERATURE = 0.3
FRAMES = 14
SEED = 11
# Same graphs, same float32 inputs: what differs is how the calls are cut (their voice
# prefill, text prefill and first frame are three calls, ours two), a float rounding
# per call carried through 14 autoregressive frames and the decoder. Measured: 7.5e-8.
TOLERANCE = 1e-4


@pytest.fixture(scope="module")
def prompt(tmp_path_factory, fixture_dir):
    """The cloning prompt as 16-bit PCM, the only WAV pocketsynth reads."""
    audio, rate = sf.read(fixture_dir / "clone_prompt_24k.wav", dtype="float32")
    path = tmp_path_factory.mktemp("prompt") / "prompt16.wav"
    sf.write(path, audio, rate, subtype="PCM_16")
    return path


def test_pocketsynth_runs_our_bundle_and_matches_our_audio(prompt) -> None:
    runtime = pocketsynth.PocketRuntime.load(tiny_bundle(), precision="fp32")
    voice = runtime.prepare_voice(str(prompt))
    text = "Hello from the other side."
    np.random.seed(SEED)
    result = runtime.synthesize_text(
        text, voice=voice, config=GenerationConfig(temperature=TEMPERATURE, max_frames=FRAMES)
    )
    info = result.metadata["backend_inference"]
    assert info["frames_generated"] == FRAMES and not info["eos_observed"]
    theirs = np.asarray(result.audio, np.float32).reshape(-1)
    assert result.sample_rate == 24000 and theirs.size == FRAMES * 1920

    tts = PocketTTS.open(runtime="onnx", model_dir=tiny_bundle())
    # Same text preparation and tokens.
    plan = tts.script(text, normalize=False)
    assert len(plan) == 1
    prepared, token_ids = runtime.frontend.prepare_and_encode(text)
    assert (prepared, token_ids) == (plan[0].text, plan[0].token_ids)
    assert result.metadata["token_count"] == len(token_ids)
    # Same voice: their encoder output (after their BOS row) is our conditioning.
    embeddings = voice.state.embeddings[0]
    bos = tts.runtime.bos_before_voice
    assert np.abs(embeddings[0] - bos).max() == 0
    samples, _ = sf.read(prompt, dtype="float32")
    ours_conditioning = tts.runtime.encode_voice(samples)
    assert np.abs(ours_conditioning - embeddings[1:]).max() <= TOLERANCE
    ours_voice = voice_from_conditioning(tts.runtime, embeddings[1:])

    rng = np.random.RandomState(SEED)
    std = np.float32(math.sqrt(TEMPERATURE))

    def their_noise(size: int) -> np.ndarray:
        return (rng.standard_normal((1, size)).astype(np.float32) * std)[0]

    opts = SpeakOptions(temperature=TEMPERATURE, output_chain=False, eos_threshold=1e9)
    chunk = dataclasses.replace(plan[0], max_frames=FRAMES)
    frames = list(tts._frames_for([chunk], ours_voice, opts, their_noise))
    assert len(frames) == FRAMES
    ours = np.concatenate([f.audio for f in frames])
    fade = np.linspace(0.0, 1.0, int(24000 * FADE_IN_SECONDS), dtype=np.float32)
    theirs[: fade.size] *= fade
    assert ours.shape == theirs.shape
    assert np.abs(ours - theirs).max() <= TOLERANCE
    assert np.abs(ours).max() > 100 * TOLERANCE  # audio, not silence
