"""The default noise path against the noise pocket-tts draws (std = sqrt(temperature)).

Every other oracle test above temperature 0 injects the oracle's noise, so
there the noise scale is never compared. Here both sides draw their own:
pocket-tts's frame noise is recorded inside ``generate_audio`` (its flow
head's input), ours where the engine hands it to the runtime's flow head, on
the default path (``PocketTTS.stream`` builds the ``GaussianNoise``). Seeds
are fixed, so the statistics are deterministic; the bounds sit several
standard errors wide yet far inside what a wrong scale (``temperature``
instead of ``sqrt(temperature)``) or clipping instead of truncation moves.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("pocket_tts")

from pocketcli import PocketTTS  # noqa: E402
from pocketcli.engine.noise import GaussianNoise  # noqa: E402
from pocketcli.options import OptionsError, SpeakOptions  # noqa: E402
from tests.support.reference import (  # noqa: E402
    TOKENIZER_MODEL,
    Reference,
    build_reference,
    make_config,
    synthetic_voice_audio,
)

pytestmark = pytest.mark.oracle

# One chunk, EOS off: 188 frames of 32 values per run on each side.
TEXT = (
    "The quick brown fox jumps over the lazy dog while seven wizards quietly box "
    "jugs of liquid for the village fair in autumn"
)


@pytest.fixture(scope="module")
def sides(tmp_path_factory) -> tuple[Reference, dict, PocketTTS, Path]:
    root = tmp_path_factory.mktemp("noise")
    ref = build_reference(make_config("tiny", str(TOKENIZER_MODEL)), 3, root / "ref")
    ref.build_pack(root / "pack")
    state = ref.voice_state_from_audio(synthetic_voice_audio(seconds=1.5), 24_000)
    ref.export_voice(state, root / "voice.safetensors")
    return (
        ref,
        state,
        PocketTTS.open(runtime="onnx", model_dir=root / "pack"),
        root / "voice.safetensors",
    )


def _oracle_noise(sides, temperature: float, clamp: float | None, seed: int) -> np.ndarray:
    ref, state, _, _ = sides
    run = ref.generate(
        TEXT,
        state,
        temperature=temperature,
        seed=seed,
        eos_threshold=1e9,
        noise_clamp=clamp,
    )
    return np.concatenate([c.frame_noise.reshape(-1) for c in run.chunks]).astype(np.float64)


def _our_noise(sides, temperature: float, clamp: float | None, seed: int) -> np.ndarray:
    """What the default path feeds the flow head, recorded at the runtime's door."""
    _, _, tts, voice_path = sides
    runtime = tts.runtime
    seen: list[np.ndarray] = []
    real = runtime.sample_latent

    def recording(z, noise, decode_steps):
        seen.append(np.array(noise, np.float64))
        return real(z, noise, decode_steps)

    runtime.sample_latent = recording
    try:
        options = SpeakOptions(
            temperature=temperature,
            seed=seed,
            eos_threshold=1e9,
            noise_clamp=clamp,
            normalize=False,
            output_chain=False,
        )
        frames = list(tts.stream(TEXT, tts.voices.load(voice_path), options))
    finally:
        del runtime.sample_latent
    assert len(seen) >= len(frames) > 150
    return np.concatenate(seen)


def _ks(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sample Kolmogorov-Smirnov distance."""
    grid = np.sort(np.concatenate([a, b]))
    fa = np.searchsorted(np.sort(a), grid, side="right") / a.size
    fb = np.searchsorted(np.sort(b), grid, side="right") / b.size
    return float(np.abs(fa - fb).max())


def _truncated_std(std: float, clamp: float) -> float:
    """Standard deviation of N(0, std^2) truncated to [-clamp, clamp]."""
    a = clamp / std
    pdf = math.exp(-0.5 * a * a) / math.sqrt(2 * math.pi)
    mass = math.erf(a / math.sqrt(2))
    return std * math.sqrt(1 - 2 * a * pdf / mass)


@pytest.mark.parametrize("temperature", [0.25, 0.7, 1.5, 3.0])
def test_default_noise_has_pocket_tts_std(sides, temperature) -> None:
    ours = _our_noise(sides, temperature, None, seed=11)
    theirs = _oracle_noise(sides, temperature, None, seed=11)
    assert ours.size > 5000 and theirs.size > 5000
    expected = math.sqrt(temperature)
    # Standard error of a std estimate from 6000 normal draws: 0.9 %.
    assert abs(theirs.std() / expected - 1) < 0.04  # the recording is the oracle's draw
    assert abs(ours.std() / expected - 1) < 0.04
    assert abs(ours.std() / theirs.std() - 1) < 0.05
    assert abs(ours.mean()) < 0.05 * expected
    assert _ks(ours, theirs) < 0.04  # same shape, not just the same spread


@pytest.mark.parametrize(("temperature", "clamp"), [(0.7, 0.5), (1.0, 1.5), (2.0, 0.3), (0.3, 2.0)])
def test_noise_clamp_truncates_like_pocket_tts(sides, temperature, clamp) -> None:
    ours = _our_noise(sides, temperature, clamp, seed=5)
    theirs = _oracle_noise(sides, temperature, clamp, seed=5)
    for sample in (ours, theirs):
        assert np.abs(sample).max() <= clamp + 1e-6
        assert abs(sample.std() / _truncated_std(math.sqrt(temperature), clamp) - 1) < 0.04
    # Truncation redraws: no pile-up at the bounds (clipping would put 10-90 % there).
    edge = 0.002 * clamp
    ours_at_edge = np.mean(np.abs(ours) > clamp - edge)
    theirs_at_edge = np.mean(np.abs(theirs) > clamp - edge)
    assert ours_at_edge < theirs_at_edge + 0.01
    assert _ks(ours, theirs) < 0.04


def test_noise_clamp_is_validated() -> None:
    for bad in (0.0, -1.0, float("nan"), float("inf"), True, "1"):
        with pytest.raises(OptionsError, match="noise_clamp"):
            SpeakOptions(noise_clamp=bad)  # type: ignore[arg-type]
    assert SpeakOptions(noise_clamp=2).noise_clamp == 2
    with pytest.raises(ValueError, match="clamp"):
        GaussianNoise(0.5, 1, clamp=0.0)
    assert not GaussianNoise(0.0, 1, clamp=0.5)(32).any()
