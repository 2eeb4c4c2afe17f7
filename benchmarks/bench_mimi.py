"""The Mimi decoder graph alone, in the form packs are built with now against the form before
(issue 34), on the full-size English architecture with random weights.

Builds both forms from one checkpoint (the form before is the builder's ``overlap_states``:
byte for byte the graph of packs built until 2026-12-03), checks that fp32 gives the same
audio over 300 frames and several splits into calls, prints each int8 graph's SNR against
fp32, then times int8 two-frame calls (what the runtime makes) as process CPU time per
frame, the forms alternating round by round, with the load average.

    python benchmarks/bench_mimi.py --work /tmp/mimi-bench --rounds 16 --threads 2
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from random_pack import cached_random_pack  # noqa: E402

from pocketcli.config import ModelConfig  # noqa: E402
from pocketcli.packs.checkpoint import read_checkpoint  # noqa: E402
from pocketcli.packs.graph_files import save_graph  # noqa: E402
from pocketcli.packs.mimi_graphs import build_mimi_decoder  # noqa: E402
from pocketcli.packs.quantize import quantise_int8  # noqa: E402

FORMS = {"before": True, "now": False}  # name -> overlap_states


def build(work: Path) -> dict[str, Path]:
    cached_random_pack(work)
    cfg = ModelConfig.from_yaml(work / "ref" / "config.yaml")
    weights = read_checkpoint(work / "ref" / "model.safetensors")
    out = {}
    for name, overlap in FORMS.items():
        folder = work / f"mimi-{name}"
        folder.mkdir(exist_ok=True)
        model, _ = build_mimi_decoder(weights, cfg.mimi, overlap_states=overlap)
        save_graph(model, folder / "mimi_decoder.onnx")
        quantise_int8(folder / "mimi_decoder.onnx", folder / "mimi_decoder.int8.onnx")
        out[name] = folder
    return out


def session(path: Path, threads: int) -> ort.InferenceSession:
    """The runtime's settings (pocketcli.runtimes.onnx._session)."""
    o = ort.SessionOptions()
    o.intra_op_num_threads = threads
    o.inter_op_num_threads = 1
    if threads > 1:
        o.add_session_config_entry("session.intra_op.allow_spinning", "0")
    o.log_severity_level = 3
    return ort.InferenceSession(str(path), o, providers=["CPUExecutionProvider"])


def zeros(s: ort.InferenceSession) -> dict[str, np.ndarray]:
    return {
        i.name: np.zeros(
            [1 if isinstance(d, str) else d for d in i.shape],
            np.int64 if "int64" in i.type else np.float32,
        )
        for i in s.get_inputs()
        if i.name != "latents"
    }


def decode(s: ort.InferenceSession, lat: np.ndarray, split: int) -> np.ndarray:
    feeds, names, audio = zeros(s), [o.name for o in s.get_outputs()], []
    for a in range(0, lat.shape[1], split):
        got = s.run(None, {"latents": lat[:, a : a + split], **feeds})
        for n, v in zip(names, got, strict=True):
            if n == "audio":
                audio.append(v)
            else:
                feeds["state." + n.removeprefix("state_out.")] = v
    return np.concatenate(audio, axis=1)


def cpu_ms_per_frame(s: ort.InferenceSession, lat: np.ndarray, calls: int) -> float:
    feeds, names = zeros(s), [o.name for o in s.get_outputs()]
    for _ in range(5):
        s.run(None, {"latents": lat, **feeds})
    start = time.process_time()
    for _ in range(calls):
        for n, v in zip(names, s.run(None, {"latents": lat, **feeds}), strict=True):
            if n != "audio":
                feeds["state." + n.removeprefix("state_out.")] = v
    return (time.process_time() - start) / calls / lat.shape[1] * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--work", type=Path, default=Path("/tmp/pockettts-bench-mimi"))
    ap.add_argument("--rounds", type=int, default=16)
    ap.add_argument("--calls", type=int, default=100)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    folders = build(args.work)
    lat = np.random.default_rng(1).standard_normal((1, 300, 32)).astype(np.float32)
    fp32 = {k: session(f / "mimi_decoder.onnx", args.threads) for k, f in folders.items()}
    ref = decode(fp32["before"], lat, 2)
    for split in (2, 1, 7, 300):
        diff = np.abs(decode(fp32["now"], lat, split) - ref).max()
        print(f"fp32, 300 frames in calls of {split}: max |now - before| {diff:.2e}")
    int8 = {k: session(f / "mimi_decoder.int8.onnx", args.threads) for k, f in folders.items()}
    for k, s in int8.items():
        err = ref - decode(s, lat, 2)
        print(f"int8 {k}: SNR against fp32 {10 * np.log10((ref**2).sum() / (err**2).sum()):.2f} dB")
    two = lat[:, :2]
    times: dict[str, list[float]] = {k: [] for k in int8}
    loads = []
    for r in range(args.rounds):
        for k in list(int8) if r % 2 == 0 else list(int8)[::-1]:
            times[k].append(cpu_ms_per_frame(int8[k], two, args.calls))
        loads.append(os.getloadavg()[0])
    print(
        f"int8 CPU-ms per frame, two-frame calls, {args.threads} thread(s), {args.rounds} rounds"
        f" of {args.calls} calls alternating, load {min(loads):.1f}-{max(loads):.1f}"
    )
    for k, v in times.items():
        print(f"  {k:6s} median {np.median(v):.3f}  min {min(v):.3f}  max {max(v):.3f}")
    print(f"  now - before: {np.median(times['now']) - np.median(times['before']):+.3f}")


if __name__ == "__main__":
    main()
