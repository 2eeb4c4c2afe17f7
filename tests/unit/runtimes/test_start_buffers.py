"""Where a chunk's KV cache starts (issue 34, first audio): the fused step's start buffers
are not zeroed, because it reads no position past a row's length (zeroing them touched
every page before the prefill); the plain step's still are, because it reads every
position of a row. Real ONNX Runtime sessions on the committed tiny pack (the plain step)
and on one built now (the fused step)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import pocketcli.runtimes.onnx as onnx_runtime
from pocketcli import PocketTTS
from tests.support.tiny_now import build_tiny_pack


@pytest.fixture(scope="module")
def fused_pack(tmp_path_factory) -> Path:
    return build_tiny_pack(tmp_path_factory.mktemp("fused") / "pack")


def _outputs(tts: PocketTTS, voice) -> np.ndarray:
    """z and EOS of two chunks, one after the other: each one's prefill and frames
    (stepped in a stack, as the scheduler does)."""
    runtime = tts.runtime
    dim = runtime.config.flow_lm.latent_dim
    nan = np.full(dim, np.nan, np.float32)
    rng = np.random.default_rng(3)
    rows = []
    for tokens in (np.arange(3, 12), np.arange(5, 9)):
        seq = runtime.start_sequence(voice, 100)
        rows.append(np.append(*runtime.prefill_then_step(seq, runtime.embed_text(tokens), nan)))
        batch = runtime.start_batch()
        for _ in range(4):
            z, eos = runtime.step_batch(batch, [seq], rng.standard_normal((1, dim), np.float32))
            rows.append(np.append(z[0], eos[0]))
    return np.array(rows)


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
