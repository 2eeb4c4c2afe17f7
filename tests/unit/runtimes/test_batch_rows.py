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


def test_joins_leave_running_rows_in_place_and_a_stream_that_sits_out_keeps_its_row(
    pack_dir, fixture_dir
) -> None:
    tts = PocketTTS.open(runtime="onnx", model_dir=pack_dir)
    runtime, voice = tts.runtime, tts.voices.load(fixture_dir / "voice.safetensors")
    rng = np.random.default_rng(0)
    dim = runtime.config.flow_lm.latent_dim
    # Which sequences step together at each call (a, b, c, d), in the order given.
    calls = ["ab", "bac", "ca", "bca", "dca"]  # c joins; b sits out, comes back; b leaves
    fed = {name: [] for name in "abcd"}
    for call in calls:
        for name in call:
            fed[name].append(rng.standard_normal(dim).astype(np.float32))

    # Alone, one row at a time, each sequence with the latents it gets in the batch.
    alone_seqs = dict(zip("abcd", _sequences(tts, voice, 4), strict=True))
    alone = {n: [runtime.step(alone_seqs[n], lat)[0] for lat in fed[n]] for n in "abcd"}

    seqs = dict(zip("abcd", _sequences(tts, voice, 4), strict=True))
    batch = runtime.start_batch()
    got: dict[str, list[np.ndarray]] = {name: [] for name in "abcd"}
    taken = {name: 0 for name in "abcd"}
    stacks = []
    for call in calls:
        if call == "dca":
            del seqs["b"]  # b's chunk ended: its row is free again
        latents = []
        for name in call:
            latents.append(fed[name][taken[name]])
            taken[name] += 1
        z, _ = runtime.step_batch(batch, [seqs[n] for n in call], np.stack(latents))
        for name, row in zip(call, z, strict=True):
            got[name].append(row)
        stacks.append(batch.keys[0])
    assert stacks[0].shape[0] == ROW_STEP  # spare rows, for streams that join
    assert stacks[1] is stacks[0], "a join restacked the running rows"
    assert stacks[4] is stacks[3], "a join into a freed row restacked the running rows"
    for name in "abcd":
        assert all(np.array_equal(x, y) for x, y in zip(got[name], alone[name], strict=True))
