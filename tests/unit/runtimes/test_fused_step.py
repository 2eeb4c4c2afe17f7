"""The fused batched FlowLM step (issue 34): ONNX Runtime's GroupQueryAttention over each
row's filled positions, the caches written in place by the graph. Against the plain step
of the committed tiny pack (built before it, and still served as it was), on a tiny pack
built now from the same weights: rows of different lengths join, sit out and leave over
many calls. Real ONNX Runtime sessions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pocketcli import PocketTTS
from tests.support.tiny_now import build_tiny_pack

# Who steps together at each call: c and d join later; b sits out twice and comes back;
# a leaves; rows of different lengths share every call. Long enough to cross a stack's
# capacity step (the rows' stacks are rebuilt on the way).
CALLS = ["ab", "abc", "abcd", "acd", "cd", "dcb", "bcd", "bd", "db", "bcd"] * 8


@pytest.fixture(scope="module")
def fused_pack(tmp_path_factory) -> Path:
    return build_tiny_pack(tmp_path_factory.mktemp("fused") / "pack")


def _run(tts: PocketTTS, voice, batched: bool) -> dict[str, list[np.ndarray]]:
    """z of every call of CALLS per sequence: in batches as CALLS says, or each alone
    (its own one-row stack) with the same latents."""
    runtime = tts.runtime
    dim = runtime.config.flow_lm.latent_dim
    nan = np.full(dim, np.nan, np.float32)
    seqs = {}
    for i, name in enumerate("abcd"):  # texts of 4, 7, 10, 13 tokens: rows of four lengths
        seqs[name] = runtime.start_sequence(voice, 200)
        emb = runtime.embed_text(np.arange(3, 7 + 3 * i, dtype=np.int64))
        runtime.prefill_then_step(seqs[name], emb, nan)
    rng = np.random.default_rng(7)
    fed = [rng.standard_normal((len(call), dim)).astype(np.float32) for call in CALLS]
    out: dict[str, list[np.ndarray]] = {name: [] for name in "abcd"}
    batch = runtime.start_batch()
    for call, latents in zip(CALLS, fed, strict=True):
        if batched:
            z, eos = runtime.step_batch(batch, [seqs[n] for n in call], latents)
        else:
            pairs = [runtime.step(seqs[n], lat) for n, lat in zip(call, latents, strict=True)]
            z = np.stack([p[0] for p in pairs])
            eos = np.array([p[1] for p in pairs])
        for name, row, e in zip(call, z, eos, strict=True):
            out[name].append(np.append(row, e))
    return out


@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_the_fused_step_follows_the_plain_one_as_rows_join_and_leave(
    pack_dir, fixture_dir, fused_pack, precision
) -> None:
    plain = PocketTTS.open(runtime="onnx", model_dir=pack_dir, precision=precision)
    fused = PocketTTS.open(runtime="onnx", model_dir=fused_pack, precision=precision)
    assert not plain.runtime._fused and fused.runtime._fused
    voice = fixture_dir / "voice.safetensors"
    want = _run(plain, plain.voices.load(voice), batched=True)
    got = _run(fused, fused.voices.load(voice), batched=True)
    for name in "abcd":
        a, b = np.array(want[name]), np.array(got[name])
        # fp32: the summation orders differ (about 1e-7 here); int8 turns some of those
        # into one step of a row's 8-bit rounding (the error an off-by-one makes is
        # of the size of the values themselves)
        err = np.sqrt(np.mean((a - b) ** 2) / np.mean(a**2))
        assert np.abs(a - b).max() < 1e-4 if precision == "fp32" else err < 1e-2


@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_a_fused_row_gives_the_same_bits_alone_and_in_any_batch(
    fixture_dir, fused_pack, precision
) -> None:
    tts = PocketTTS.open(runtime="onnx", model_dir=fused_pack, precision=precision)
    voice = tts.voices.load(fixture_dir / "voice.safetensors")
    together, alone = _run(tts, voice, batched=True), _run(tts, voice, batched=False)
    for name in "abcd":
        assert np.array_equal(np.array(together[name]), np.array(alone[name])), name


def test_a_fused_pack_clones_and_exports_voices_as_the_plain_one(
    pack_dir, fixture_dir, fused_pack
) -> None:
    """The voice's keys go into the fused cache layout and come back out of it."""
    plain = PocketTTS.open(runtime="onnx", model_dir=pack_dir)
    fused = PocketTTS.open(runtime="onnx", model_dir=fused_pack)
    states = []
    for tts in (plain, fused):
        voice = tts.voices.load(fixture_dir / "voice.safetensors")
        seq = tts.runtime.start_sequence(voice, 50)
        emb = tts.runtime.embed_text(np.arange(3, 9, dtype=np.int64))
        tts.runtime.prefill(seq, emb)
        states.append(tts.runtime.voice_state(seq))
    for a, b in zip(
        states[0].keys + states[0].values, states[1].keys + states[1].values, strict=True
    ):
        assert a.shape == b.shape
        assert np.abs(a - b).max() < 1e-5
