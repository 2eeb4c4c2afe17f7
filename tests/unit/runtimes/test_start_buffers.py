"""Where a chunk's KV cache starts (issue 34, first audio): a chunk whose cache has moved
into the scheduler's stack leaves its start buffers to the next chunk (their pages are
mapped already); the fused step's start buffers are not zeroed, because it reads no
position past a row's length. Neither may change a result: real ONNX Runtime sessions
on the committed tiny pack (the plain step) and on one built now (the fused step)."""

from __future__ import annotations

import weakref
from pathlib import Path

import numpy as np
import pytest

import pocketcli.runtimes.onnx as onnx_runtime
from pocketcli import PocketTTS
from tests.support.tiny_now import build_tiny_pack


@pytest.fixture(scope="module")
def fused_pack(tmp_path_factory) -> Path:
    return build_tiny_pack(tmp_path_factory.mktemp("fused") / "pack")


def _outputs(tts: PocketTTS, voice, poison_spare: bool = False) -> np.ndarray:
    """z and EOS of two chunks, one after the other: each one's prefill and frames
    (stepped in a stack, as the scheduler does). ``poison_spare``: the first chunk's
    buffers are NaN everywhere past its length when it leaves them to the second."""
    runtime = tts.runtime
    dim = runtime.config.flow_lm.latent_dim
    nan = np.full(dim, np.nan, np.float32)
    rng = np.random.default_rng(3)
    rows = []
    for tokens in (np.arange(3, 12), np.arange(5, 9)):
        seq = runtime.start_sequence(voice, 100)
        rows.append(np.append(*runtime.prefill_then_step(seq, runtime.embed_text(tokens), nan)))
        if poison_spare:
            _poison_past_length(seq)
        batch = runtime.start_batch()
        for _ in range(4):
            z, eos = runtime.step_batch(batch, [seq], rng.standard_normal((1, dim), np.float32))
            rows.append(np.append(z[0], eos[0]))
    return np.array(rows)


def _poison_past_length(seq) -> None:
    """NaN in every position of ``seq``'s buffers past its length (keys of the plain
    step are ``[Hkv, Dh, C]``, positions last; the rest ``[Hkv, C, Dh]``)."""
    for keys in seq.keys:
        if keys.shape[-1] == seq.capacity:
            keys[..., seq.length :] = np.nan
        else:
            keys[:, seq.length :] = np.nan
    for values in seq.values:
        values[:, seq.length :] = np.nan


def _next_start(tts: PocketTTS, voice, first: object) -> list[np.ndarray]:
    """The next chunk's start buffers, once ``first`` (a sequence) has joined a stack."""
    runtime = tts.runtime
    dim = runtime.config.flow_lm.latent_dim
    runtime.prefill_then_step(first, runtime.embed_text(np.arange(3, 8)), np.full(dim, np.nan))
    runtime.step_batch(runtime.start_batch(), [first], np.zeros((1, dim), np.float32))
    second = runtime.start_sequence(voice, 100)
    return [*second.keys, *second.values]


@pytest.mark.parametrize("fused", [False, True])
def test_a_chunk_starting_in_the_last_ones_buffers_gets_the_same_bits(
    pack_dir, fused_pack, voice_path, fused
) -> None:
    tts = PocketTTS.open(runtime="onnx", model_dir=fused_pack if fused else pack_dir)
    assert tts.runtime._fused == fused
    voice = tts.voices.load(voice_path)
    fresh = PocketTTS.open(runtime="onnx", model_dir=fused_pack if fused else pack_dir)
    want = _outputs(fresh, fresh.voices.load(voice_path))
    # What the chunk before left past its length (NaN here, as a failed stream's would
    # be) is never read: the plain step's positions are zeroed again, the fused step
    # reads none of them.
    got = _outputs(tts, voice, poison_spare=True)
    assert np.isfinite(got).all()
    np.testing.assert_array_equal(got, want)


def test_the_fused_step_reads_no_position_past_a_rows_length(
    pack_dir, fused_pack, voice_path, monkeypatch
) -> None:
    want = {}
    for pack in (pack_dir, fused_pack):
        tts = PocketTTS.open(runtime="onnx", model_dir=pack)
        want[pack] = _outputs(tts, tts.voices.load(voice_path))
    # Start buffers that are not zeroed come back full of NaN: a step that read past a
    # row's length (or a plain step given them) would return NaN.
    monkeypatch.setattr(
        onnx_runtime, "heap_empty", lambda shape: np.full(shape, np.nan, np.float32)
    )
    for pack in (pack_dir, fused_pack):
        tts = PocketTTS.open(runtime="onnx", model_dir=pack)
        np.testing.assert_array_equal(_outputs(tts, tts.voices.load(voice_path)), want[pack])


def test_the_next_chunk_starts_in_the_last_ones_buffers_unless_someone_holds_them(
    fused_pack, voice_path
) -> None:
    tts = PocketTTS.open(runtime="onnx", model_dir=fused_pack)
    voice = tts.voices.load(voice_path)
    first = tts.runtime.start_sequence(voice, 100)
    held = first.keys[0][:, :4]  # a view someone kept: the first chunk's buffers stay its
    nxt = _next_start(tts, voice, first)
    assert not any(np.shares_memory(held, a) for a in nxt)
    first = tts.runtime.start_sequence(voice, 100)
    kept = [weakref.ref(a) for a in [*first.keys, *first.values]]
    nxt = _next_start(tts, voice, first)
    # let go of: the next chunk starts in them
    assert len(nxt) == len(kept) and all(ref() is a for ref, a in zip(kept, nxt, strict=True))
