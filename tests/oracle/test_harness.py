"""Checks of the oracle harness itself (tests/support/reference.py) on small random models.

The harness runs Kyutai's pocket_tts on seeded random weights; these tests make sure what it
saves reloads through the package's own loader and that what it records is self-consistent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytestmark = pytest.mark.oracle

torch = pytest.importorskip("torch")
pytest.importorskip("pocket_tts")

import safetensors.torch  # noqa: E402
from pocket_tts.models.text_chunking import (  # noqa: E402
    prepare_text_prompt,
    split_into_best_sentences,
)
from pocket_tts.utils.config import Config  # noqa: E402

from tests.support.reference import (  # noqa: E402
    TOKENIZER_JSON,
    TOKENIZER_MODEL,
    Reference,
    ReferenceRun,
    build_reference,
    make_config,
    max_frames_for_tokens,
    synthetic_voice_audio,
)

WEIGHT_SEED = 1234
MIN_FRAMES_BEFORE_EOS = 6
NO_EOS = 1e9  # an EOS threshold no logit reaches: max-length chunks
SHORT_TEXT = "Hello world."  # 3 tokens -> at most 38 frames
THREE_SENTENCES = "The cat sat on the mat. It was a sunny day outside. Then it rained."


@dataclass
class Env:
    name: str
    ref: Reference
    voice: dict[str, dict[str, Any]]
    out_dir: Path


@pytest.fixture(scope="module", params=["tiny", "narrow"])
def env(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Env:
    name = request.param
    out_dir = tmp_path_factory.mktemp(f"oracle-{name}")
    ref = build_reference(make_config(name, str(TOKENIZER_MODEL)), WEIGHT_SEED, out_dir)
    voice = ref.voice_state_from_audio(synthetic_voice_audio(seconds=2.0, seed=0), 24000)
    return Env(name, ref, voice, out_dir)


def _assert_runs_equal(a: ReferenceRun, b: ReferenceRun) -> None:
    assert np.array_equal(a.audio, b.audio)
    assert len(a.chunks) == len(b.chunks)
    for ca, cb in zip(a.chunks, b.chunks, strict=True):
        assert ca.token_ids == cb.token_ids
        assert ca.emitted_frames == cb.emitted_frames
        assert np.array_equal(ca.frame_noise, cb.frame_noise)
        assert np.array_equal(ca.eos_logits, cb.eos_logits)
        assert np.array_equal(ca.latents, cb.latents)


def _check_consistent(ref: Reference, run: ReferenceRun) -> None:
    assert run.audio.dtype == np.float32 and run.audio.ndim == 1
    assert np.all(np.isfinite(run.audio))
    assert float(np.max(np.abs(run.audio))) < 1.0
    emitted = 0
    for chunk in run.chunks:
        n = chunk.n_steps
        assert chunk.frame_noise.shape == (n, 32)
        assert chunk.latents.shape == (n, 32)
        assert chunk.eos_logits.shape == (n,)
        assert np.all(np.isfinite(chunk.latents)) and np.all(np.isfinite(chunk.eos_logits))
        assert chunk.emitted_frames <= n <= max_frames_for_tokens(len(chunk.token_ids))
        assert n - chunk.emitted_frames in (0, 1)
        emitted += chunk.emitted_frames
    assert emitted * ref.samples_per_frame == run.audio.shape[0]


# ----------------------------------------------------------------------------- configs


@pytest.mark.parametrize(
    "name", ["tiny", "narrow", "english", "english_2026-09_24l", "english_2m_2026-10"]
)
@pytest.mark.parametrize("tokenizer", [TOKENIZER_MODEL, TOKENIZER_JSON])
def test_make_config_validates(name: str, tokenizer: Path) -> None:
    config = make_config(name, str(tokenizer))
    parsed = Config(**config)
    assert parsed.weights_path is None and parsed.weights_path_without_voice_cloning is None
    assert parsed.flow_lm.weights_path is None and parsed.mimi.weights_path is None
    assert "weights_path" not in repr(config)
    lookup = parsed.flow_lm.lookup_table
    assert lookup.tokenizer_path == str(tokenizer)
    assert lookup.tokenizer == ("tokenizers" if tokenizer.suffix == ".json" else "sentencepiece")
    assert parsed.mimi.quantizer.dimension == 32
    if name == "narrow":
        assert parsed.flow_lm.transformer.num_kv_heads == 3
        assert parsed.flow_lm.transformer.d_model // parsed.flow_lm.transformer.num_heads == 16


def test_make_config_rejects_unknown_names() -> None:
    with pytest.raises(ValueError):
        make_config("no_such_config", str(TOKENIZER_MODEL))
    with pytest.raises(ValueError):
        make_config("tiny", "tokenizer.txt")


# ----------------------------------------------------------------------------- model


def test_shapes_and_randomized_tensors(env: Env) -> None:
    assert env.ref.sample_rate == 24000
    assert env.ref.samples_per_frame == 1920
    for name, tensor in env.ref.model.state_dict().items():
        if tensor.numel() > 1:
            flat = tensor.reshape(-1)
            assert not bool((flat == flat[0]).all()), f"{name} is still constant"


def test_checkpoint_reloads_strictly_and_matches(env: Env, tmp_path: Path) -> None:
    ref = env.ref
    saved = safetensors.torch.load_file(str(ref.checkpoint_path))
    live = ref.model.state_dict()
    assert saved.keys() == live.keys()
    for key, tensor in live.items():
        assert torch.equal(saved[key], tensor), key

    reloaded = Reference.load(ref.config_path)
    assert reloaded.config == ref.config
    for key, tensor in reloaded.model.state_dict().items():
        assert torch.equal(saved[key], tensor), key

    voice = reloaded.voice_state_from_audio(synthetic_voice_audio(seconds=2.0, seed=0), 24000)
    assert voice.keys() == env.voice.keys()
    for module, state in voice.items():
        for field_name, tensor in state.items():
            assert torch.equal(tensor, env.voice[module][field_name]), (module, field_name)

    kwargs: dict[str, Any] = dict(temperature=0.3, seed=7, eos_threshold=NO_EOS)
    _assert_runs_equal(
        ref.generate(SHORT_TEXT, env.voice, **kwargs),
        reloaded.generate(SHORT_TEXT, voice, **kwargs),
    )

    # The package's loader really is strict: a missing tensor is refused.
    broken_dir = tmp_path / "broken"
    broken_dir.mkdir()
    missing = dict(saved)
    missing.pop("flow_lm.emb_std")
    safetensors.torch.save_file(missing, str(broken_dir / "model.safetensors"))
    text = ref.config_path.read_text(encoding="utf-8")
    broken_config = broken_dir / "config.yaml"
    broken_config.write_text(
        text.replace(str(ref.checkpoint_path.resolve()), str(broken_dir / "model.safetensors")),
        encoding="utf-8",
    )
    with pytest.raises(RuntimeError, match="emb_std"):
        Reference.load(broken_config)


def test_exported_voice_gives_same_audio(env: Env, tmp_path: Path) -> None:
    path = tmp_path / "voice.safetensors"
    env.ref.export_voice(env.voice, path)
    loaded = env.ref.model.get_state_for_audio_prompt(path)
    kwargs: dict[str, Any] = dict(temperature=0.3, seed=11, frames_after_eos=2)
    _assert_runs_equal(
        env.ref.generate(SHORT_TEXT, env.voice, **kwargs),
        env.ref.generate(SHORT_TEXT, loaded, **kwargs),
    )


# ----------------------------------------------------------------------------- recording


def test_temperature_zero_records_zero_noise(env: Env) -> None:
    a = env.ref.generate(SHORT_TEXT, env.voice, temperature=0.0, seed=1, eos_threshold=NO_EOS)
    b = env.ref.generate(SHORT_TEXT, env.voice, temperature=0.0, seed=2, eos_threshold=NO_EOS)
    for chunk in a.chunks:
        assert chunk.n_steps > 0
        assert not np.any(chunk.frame_noise)
    _assert_runs_equal(a, b)  # no noise, so the seed does not matter


def test_noise_is_recorded_and_seeded(env: Env) -> None:
    temp = 0.5
    kwargs: dict[str, Any] = dict(temperature=temp, eos_threshold=NO_EOS)
    a = env.ref.generate(SHORT_TEXT, env.voice, seed=3, **kwargs)
    b = env.ref.generate(SHORT_TEXT, env.voice, seed=3, **kwargs)
    c = env.ref.generate(SHORT_TEXT, env.voice, seed=4, **kwargs)
    _assert_runs_equal(a, b)
    noise = a.chunks[0].frame_noise
    assert abs(float(noise.std()) - math.sqrt(temp)) < 0.1 * math.sqrt(temp)
    assert abs(float(noise.mean())) < 0.1
    assert not np.array_equal(noise, c.chunks[0].frame_noise)
    assert not np.array_equal(a.audio, c.audio)
    # The noise is the global torch RNG stream: one [1, 32] normal draw per FlowLM call, the
    # text prefill's draw (discarded) first, then one per frame step.
    torch.manual_seed(3)
    draws = torch.empty(1 + noise.shape[0], 32)
    for row in draws:
        torch.nn.init.normal_(row.view(1, 32), mean=0.0, std=temp**0.5)
    np.testing.assert_array_equal(noise, draws[1:].numpy())
    # A 2-step sampler still records x0 once per frame step.
    d = env.ref.generate(SHORT_TEXT, env.voice, seed=3, decode_steps=2, **kwargs)
    assert np.array_equal(d.chunks[0].frame_noise[0], noise[0])
    assert not np.array_equal(d.chunks[0].latents[0], a.chunks[0].latents[0])


@pytest.mark.parametrize("eos_threshold", [None, NO_EOS])
def test_recorded_counts_are_consistent(env: Env, eos_threshold: float | None) -> None:
    run = env.ref.generate(
        THREE_SENTENCES, env.voice, temperature=0.3, seed=5, eos_threshold=eos_threshold
    )
    _check_consistent(env.ref, run)
    if eos_threshold == NO_EOS:
        for chunk in run.chunks:
            ceiling = max_frames_for_tokens(len(chunk.token_ids))
            assert chunk.n_steps == chunk.emitted_frames == ceiling


def test_eos_minimum_frames(env: Env) -> None:
    ref = env.ref
    # Random weights: every EOS logit is above the default -4.0, yet frames 0-5 never stop.
    run = ref.generate(SHORT_TEXT, env.voice, temperature=0.3, seed=6, frames_after_eos=2)
    (chunk,) = run.chunks
    assert np.all(chunk.eos_logits > -4.0)
    assert chunk.emitted_frames == MIN_FRAMES_BEFORE_EOS + 2
    assert chunk.n_steps == chunk.emitted_frames + 1

    # frames_after_eos=None: the package's guess for <= 4 words is 3 + 2.
    run = ref.generate(SHORT_TEXT, env.voice, temperature=0.3, seed=6)
    assert run.chunks[0].emitted_frames == MIN_FRAMES_BEFORE_EOS + 5

    # A threshold crossed before frame 6 but first crossed at a later step after it: EOS is
    # that later step. The trajectory up to the stop does not depend on the threshold (same
    # computations, same RNG draws), so a max-length run tells where EOS must land.
    after_eos = 2
    for seed in range(20):
        full = ref.generate(SHORT_TEXT, env.voice, temperature=0.3, seed=seed, eos_threshold=NO_EOS)
        found = _threshold_with_late_eos(full.chunks[0].eos_logits, after_eos)
        if found is None:
            continue
        threshold, eos_step = found
        run = ref.generate(
            SHORT_TEXT,
            env.voice,
            temperature=0.3,
            seed=seed,
            eos_threshold=threshold,
            frames_after_eos=after_eos,
        )
        (chunk,) = run.chunks
        assert chunk.emitted_frames == eos_step + after_eos
        assert chunk.n_steps == eos_step + after_eos + 1
        np.testing.assert_array_equal(chunk.latents, full.chunks[0].latents[: chunk.n_steps])
        np.testing.assert_array_equal(chunk.eos_logits, full.chunks[0].eos_logits[: chunk.n_steps])
        break
    else:
        pytest.fail("no seed gave a threshold crossed both before and after frame 6")


def _threshold_with_late_eos(logits: np.ndarray, after_eos: int) -> tuple[float, int] | None:
    """A threshold some step < 6 exceeds, first exceeded at a step > 6 afterwards."""
    values = np.unique(logits)
    for threshold in (values[:-1] + values[1:]) / 2:
        early = bool(np.any(logits[:MIN_FRAMES_BEFORE_EOS] > threshold))
        late = np.nonzero(logits[MIN_FRAMES_BEFORE_EOS:] > threshold)[0]
        if not early or late.size == 0:
            continue
        eos_step = MIN_FRAMES_BEFORE_EOS + int(late[0])
        if eos_step > MIN_FRAMES_BEFORE_EOS and eos_step + after_eos < logits.size:
            return float(threshold), eos_step
    return None


def test_multi_chunk_text(env: Env) -> None:
    ref = env.ref
    max_tokens = 12
    run = ref.generate(THREE_SENTENCES, env.voice, temperature=0.3, seed=8, max_tokens=max_tokens)
    assert len(run.chunks) >= 2
    _check_consistent(ref, run)

    model = ref.model
    tokenizer = model.flow_lm.conditioner.tokenizer
    pieces = split_into_best_sentences(
        tokenizer,
        THREE_SENTENCES,
        max_tokens,
        model.pad_with_spaces_for_short_inputs,
        remove_semicolons=model.remove_semicolons,
        append_terminal_punctuation=model.append_terminal_punctuation,
        capitalize_first_letter=model.capitalize_first_letter,
        replace_characters=model.replace_characters,
    )
    assert len(pieces) == len(run.chunks)
    for piece, chunk in zip(pieces, run.chunks, strict=True):
        prepared, _ = prepare_text_prompt(
            piece,
            model.pad_with_spaces_for_short_inputs,
            model.remove_semicolons,
            model.append_terminal_punctuation,
            model.capitalize_first_letter,
            model.replace_characters,
        )
        assert chunk.token_ids == tokenizer.encode(prepared)
        assert len(chunk.token_ids) <= max_tokens
