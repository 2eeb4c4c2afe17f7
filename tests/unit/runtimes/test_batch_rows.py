"""The ONNX runtime's batch stack: a stream that joins is copied into a spare row and
the running rows stay where they are (no copy of their caches); rows are fed in any
order with the same results. Real ONNX Runtime sessions on the committed tiny pack."""

from __future__ import annotations

import numpy as np

from pocketcli import PocketTTS
from pocketcli.runtimes.onnx import ROW_STEP


def _sequences(tts: PocketTTS, voice, n: int):
    runtime = tts.runtime
    seqs = []
    for i in range(n):
        seq = runtime.start_sequence(voice, 40)
        emb = runtime.embed_text(np.arange(3, 8 + i, dtype=np.int64))
        nan = np.full(runtime.config.flow_lm.latent_dim, np.nan, np.float32)
        runtime.prefill_then_step(seq, emb, nan)
        seqs.append(seq)
    return seqs


def test_a_join_leaves_the_running_rows_in_place_with_the_same_results(
    pack_dir, fixture_dir
) -> None:
    tts = PocketTTS.load(pack_dir)
    runtime, voice = tts.runtime, tts.load_voice(fixture_dir / "voice.safetensors")
    rng = np.random.default_rng(0)
    latents = rng.standard_normal((6, 3, runtime.config.flow_lm.latent_dim)).astype(np.float32)

    # Alone, one row at a time, each sequence with the latents it gets in the batch below.
    fed = {0: [latents[0, 0], latents[1, 0], latents[2, 0]], 1: [latents[0, 1], latents[1, 1]]}
    fed[2] = [latents[1, 2], latents[2, 2]]
    seqs = _sequences(tts, voice, 3)
    alone = [[runtime.step(seqs[i], lat)[0] for lat in fed[i]] for i in range(3)]

    a, b, c = _sequences(tts, voice, 3)
    batch = runtime.start_batch()
    z0, _ = runtime.step_batch(batch, [a, b], latents[0, :2])
    stack = batch.keys[0]
    assert stack.shape[0] == ROW_STEP  # spare rows, for streams that join
    z1, _ = runtime.step_batch(batch, [b, a, c], latents[1, [1, 0, 2]])  # c joins, order changes
    assert batch.keys[0] is stack, "a join restacked the running rows"
    z2, _ = runtime.step_batch(batch, [c, a], latents[2, [2, 0]])  # b leaves
    assert batch.keys[0] is stack

    got = [[z0[0], z1[1], z2[1]], [z0[1], z1[0]], [z1[2], z2[0]]]  # a, b, c
    for ours, theirs in zip(got, alone, strict=True):
        assert all(np.array_equal(x, y) for x, y in zip(ours, theirs, strict=True))
