"""The FlowLM calls alone, two packs side by side: CPU-ms per batched step and per prefill.

    python benchmarks/bench_flowlm_step.py --model-dir OLD,NEW --voice-file VOICE

Each round, for each row count, builds that many fresh sequences on each pack (the voice,
then texts of different lengths, so the rows' lengths differ), then times ``--steps``
batched steps through the runtime (``step_batch``: the graph and the runtime's KV
handling, restacks included), packs alternating; and one-row text prefills
(``prefill_then_step``) of ``--tokens`` tokens. Prints medians of process CPU time (all
threads) per call, each pack's rounds, and the load average.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from pocketcli import PocketTTS


def _sequences(tts: PocketTTS, voice, rows: int, tokens0: int) -> list:
    runtime = tts.runtime
    nan = np.full(runtime.config.flow_lm.latent_dim, np.nan, np.float32)
    seqs = []
    for r in range(rows):
        seq = runtime.start_sequence(voice, 400)
        emb = runtime.embed_text(np.arange(3, 3 + tokens0 + 5 * r, dtype=np.int64))
        runtime.prefill_then_step(seq, emb, nan)
        seqs.append(seq)
    return seqs


def _steps(tts: PocketTTS, voice, rows: int, steps: int, rng) -> float:
    runtime = tts.runtime
    seqs = _sequences(tts, voice, rows, 12)
    batch = runtime.start_batch()
    dim = runtime.config.flow_lm.latent_dim
    latents = rng.standard_normal((steps, rows, dim)).astype(np.float32)
    runtime.step_batch(batch, seqs, latents[0])  # the stack is built outside the timing
    start = time.process_time()
    for latent in latents[1:]:
        runtime.step_batch(batch, seqs, latent)
    return (time.process_time() - start) / (steps - 1) * 1e3


def _prefill(tts: PocketTTS, voice, tokens: int, calls: int) -> float:
    runtime = tts.runtime
    nan = np.full(runtime.config.flow_lm.latent_dim, np.nan, np.float32)
    emb = runtime.embed_text(np.arange(3, 3 + tokens, dtype=np.int64))
    seqs = [runtime.start_sequence(voice, 400) for _ in range(calls)]
    start = time.process_time()
    for seq in seqs:
        runtime.prefill_then_step(seq, emb, nan)
    return (time.process_time() - start) / calls * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-dir", required=True, help="PACK[,PACK]")
    parser.add_argument("--voice-file", required=True)
    parser.add_argument("--precision", default="int8")
    parser.add_argument("--rows", default="1,4,8")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--tokens", default="17,33")
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    packs = args.model_dir.split(",")
    models = [PocketTTS.open(runtime="onnx", model_dir=p, precision=args.precision) for p in packs]
    voices = [m.voices.load(args.voice_file) for m in models]
    rng = np.random.default_rng(0)
    print(f"load average at start {os.getloadavg()}")
    cases = [("step", int(r)) for r in args.rows.split(",")]
    cases += [("prefill", int(t)) for t in args.tokens.split(",")]
    for kind, n in cases:
        spent: list[list[float]] = [[] for _ in packs]
        for rnd in range(args.rounds):
            order = range(len(packs)) if rnd % 2 == 0 else reversed(range(len(packs)))
            for i in order:
                if kind == "step":
                    spent[i].append(_steps(models[i], voices[i], n, args.steps, rng))
                else:
                    spent[i].append(_prefill(models[i], voices[i], n, 8))
        what = f"{n} rows" if kind == "step" else f"{n} tokens"
        line = " | ".join(
            f"{Path(p).name}: {np.median(s):.2f} ({', '.join(f'{x:.2f}' for x in s)})"
            for p, s in zip(packs, spent, strict=True)
        )
        print(f"{kind} {what}: CPU-ms per call, median (rounds): {line}", flush=True)
    print(f"load average at end {os.getloadavg()}")


if __name__ == "__main__":
    main()
