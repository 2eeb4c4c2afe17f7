"""The Mimi decoder graph alone, in the form packs are built with now against the form before
(issue 34), on the full-size English architecture with random weights.

Builds both forms from one checkpoint (the form before is the builder's ``overlap_states``:
byte for byte the graph of packs built until 2026-12-03), checks that fp32 gives the same
audio over 300 frames and several splits into calls, prints each int8 graph's SNR against
fp32, then times int8 two-frame calls (what the runtime makes) as process CPU time per
frame, the forms alternating round by round, with the load average.

    python benchmarks/bench_mimi.py --work /tmp/mimi-bench --rounds 16 --threads 2

``--frames 1,2,4`` times the int8 decoder (the form packs are built with now) in calls of
each many frames instead, alternating; ``--evict MB`` reads that many megabytes between
calls, untimed (the FlowLM's weights pass through the cache between a stream's Mimi calls
in the engine; 75 MB in the full-size int8 step). ``--matmuls`` times each weight MatMul
of the decoder alone at the shapes of a two-frame call (``--matmul-frames``): float (with
its bias), ONNX Runtime's dynamic int8 (the pack's form, ``DynamicQuantizeMatMul`` once
the session fuses it) and ``MatMulNBits`` with 8-bit blocks of 32 (accuracy level 4),
and the whole int8 graph's SNR against fp32 with that one MatMul kept float.

    python benchmarks/bench_mimi.py --work DIR --threads 1 --frames 1,2,4 --evict 80
    python benchmarks/bench_mimi.py --work DIR --threads 1 --matmuls
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from random_pack import cached_random_pack  # noqa: E402

from pocketcli.config import ModelConfig  # noqa: E402
from pocketcli.packs.checkpoint import read_checkpoint  # noqa: E402
from pocketcli.packs.graph_files import save_graph  # noqa: E402
from pocketcli.packs.mimi_graphs import build_mimi_decoder  # noqa: E402
from pocketcli.packs.quantize import (  # noqa: E402
    FLOAT_WEIGHT_PREFIXES,
    FLOAT_WEIGHTS,
    float_matmuls,
    int8_matmuls,
    quantise_int4,
    quantise_int8,
)

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


def cpu_ms_per_frame(
    s: ort.InferenceSession, lat: np.ndarray, calls: int, evict: np.ndarray | None = None
) -> float:
    """Process CPU time per frame of ``calls`` calls of ``lat``, each fed the states the
    one before returned; with ``evict``, that buffer is read between calls (not timed)."""
    feeds, names = zeros(s), [o.name for o in s.get_outputs()]
    for _ in range(5):
        s.run(None, {"latents": lat, **feeds})
    spent = 0.0
    for _ in range(calls):
        if evict is not None:
            evict.sum()
        start = time.process_time()
        outs = s.run(None, {"latents": lat, **feeds})
        spent += time.process_time() - start
        for n, v in zip(names, outs, strict=True):
            if n != "audio":
                feeds["state." + n.removeprefix("state_out.")] = v
    return spent / calls / lat.shape[1] * 1000


def snr_db(ref: np.ndarray, got: np.ndarray) -> float:
    return float(10 * np.log10((ref**2).sum() / ((ref - got) ** 2).sum()))


def matmul_rows(fp32: Path, frames: int) -> dict[str, int]:
    """Rows of each weight MatMul's input in a call of ``frames`` frames (states at zero)."""
    model = onnx.load(str(fp32))
    weights = {t.name for t in model.graph.initializer}
    inputs = {
        n.name: n.input[0]
        for n in model.graph.node
        if n.op_type == "MatMul" and n.input[1] in weights
    }
    for name in dict.fromkeys(inputs.values()):
        model.graph.output.append(onnx.helper.make_empty_tensor_value_info(name))
    with tempfile.TemporaryDirectory() as tmp:
        onnx.save(model, f"{tmp}/m.onnx")
        s = session(Path(f"{tmp}/m.onnx"), 1)
        lat = np.zeros((1, frames, 32), np.float32)
        outs = s.run(None, {"latents": lat, **zeros(s)})
        got = dict(zip([o.name for o in s.get_outputs()], outs, strict=True))
    return {n: int(np.prod(got[x].shape[:-1])) for n, x in inputs.items()}


def one_matmul(model: onnx.ModelProto, node: onnx.NodeProto, folder: Path) -> Path:
    """``node`` alone (with its bias Add, when one follows) as a graph in ``folder``."""
    g = model.graph
    init = {t.name: onnx.numpy_helper.to_array(t) for t in g.initializer}
    w = init[node.input[1]]
    nodes = [onnx.helper.make_node("MatMul", ["x", "w"], ["y"])]
    weights = [onnx.numpy_helper.from_array(w, "w")]
    after = [n for n in g.node if node.output[0] in n.input]
    out = "y"
    if len(after) == 1 and after[0].op_type == "Add" and after[0].input[1] in init:
        nodes.append(onnx.helper.make_node("Add", ["y", "b"], ["z"]))
        weights.append(onnx.numpy_helper.from_array(init[after[0].input[1]], "b"))
        out = "z"
    f = onnx.TensorProto.FLOAT
    graph = onnx.helper.make_graph(
        nodes,
        node.name,
        [onnx.helper.make_tensor_value_info("x", f, ["M", w.shape[0]])],
        [onnx.helper.make_tensor_value_info(out, f, ["M", w.shape[1]])],
        weights,
    )
    path = folder / f"{node.name}.onnx"
    onnx.save(onnx.helper.make_model(graph, opset_imports=model.opset_import), path)
    return path


def compare_matmuls(folder: Path, args: argparse.Namespace) -> None:
    """Levers 1 and 2 of issue 34's Mimi round: each weight MatMul in float, the pack's
    dynamic int8 and MatMulNBits 8-bit, alone, CPU-ms a call; and the SNR of the whole
    int8 graph with that MatMul kept float."""
    fp32 = folder / "mimi_decoder.onnx"
    model = onnx.load(str(fp32))
    rows = matmul_rows(fp32, args.matmul_frames)
    lat = np.random.default_rng(1).standard_normal((1, 300, 32)).astype(np.float32)
    ref = decode(session(fp32, args.threads), lat, 2)
    keep = float_matmuls(
        model.graph, lambda n: n in FLOAT_WEIGHTS or n.startswith(FLOAT_WEIGHT_PREFIXES)
    )
    print(
        f"each weight MatMul alone, {args.matmul_frames}-frame calls, CPU-ms a call,"
        f" {args.threads} thread(s), {args.rounds} rounds alternating,"
        f" load {os.getloadavg()[0]:.1f}"
    )
    print("  weight [K, N] rows: float / int8 / nbits8; int8 graph's SNR with it float (dB)")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for node in model.graph.node:
            if node.name not in rows:
                continue
            times = time_matmul_forms(model, node, rows[node.name], work, args)
            int8 = work / "whole.int8.onnx"
            int8_matmuls(
                fp32,
                int8,
                [*keep, node.name],
                reduce_range=True,
                use_external_data_format=True,
                extra_options={"MatMulConstBOnly": True},
            )
            snr = snr_db(ref, decode(session(int8, args.threads), lat, 2))
            dims = next(t for t in model.graph.initializer if t.name == node.input[1]).dims
            note = " (float in packs)" if node.name in keep else ""
            print(
                f"  {node.input[1]}{note} {list(dims)} {rows[node.name]}: "
                + " / ".join(f"{np.median(v):.4f}" for v in times.values())
                + f"; {snr:.2f}",
                flush=True,
            )


def time_matmul_forms(
    model: onnx.ModelProto, node: onnx.NodeProto, rows: int, work: Path, args: argparse.Namespace
) -> dict[str, list[float]]:
    """CPU-ms a call of ``node`` alone in float, dynamic int8 and MatMulNBits 8-bit."""
    forms = {"float": one_matmul(model, node, work)}
    forms["int8"] = work / f"{node.name}.int8.onnx"
    quantise_int8(forms["float"], forms["int8"])
    forms["nbits8"] = work / f"{node.name}.nb8.onnx"
    quantise_int4(forms["float"], forms["nbits8"], block_size=32, bits=8)
    ss = {k: session(p, args.threads) for k, p in forms.items()}
    k_dim = next(t for t in model.graph.initializer if t.name == node.input[1]).dims[0]
    x = np.random.default_rng(0).standard_normal((rows, k_dim)).astype(np.float32)
    times: dict[str, list[float]] = {k: [] for k in ss}
    for r in range(args.rounds):
        for k in list(ss) if r % 2 == 0 else list(ss)[::-1]:
            times[k].append(one_call_ms(ss[k], x, args.calls))
    return times


def one_call_ms(s: ort.InferenceSession, x: np.ndarray, calls: int) -> float:
    for _ in range(3):
        s.run(None, {"x": x})
    start = time.process_time()
    for _ in range(calls):
        s.run(None, {"x": x})
    return (time.process_time() - start) / calls * 1000


def frames_per_call(args: argparse.Namespace, folder: Path) -> None:
    """CPU-ms per frame of the int8 decoder in calls of each of ``args.frames`` frames."""
    s = session(folder / "mimi_decoder.int8.onnx", args.threads)
    sizes = [int(f) for f in args.frames.split(",")]
    lat = np.random.default_rng(1).standard_normal((1, max(sizes), 32)).astype(np.float32)
    evict = np.ones(args.evict * 2**18, np.float32) if args.evict else None
    times: dict[int, list[float]] = {f: [] for f in sizes}
    loads = []
    for r in range(args.rounds):
        for f in sizes if r % 2 == 0 else sizes[::-1]:
            # the same frames of audio a round whatever the call size
            calls = max(1, args.calls * 2 // f)
            times[f].append(cpu_ms_per_frame(s, lat[:, :f], calls, evict))
        loads.append(os.getloadavg()[0])
    print(
        f"int8 CPU-ms per frame by frames a call, {args.threads} thread(s), {args.rounds}"
        f" rounds alternating, {args.evict} MB read between calls,"
        f" load {min(loads):.1f}-{max(loads):.1f}"
    )
    for f, v in times.items():
        print(
            f"  {f} frame(s) a call: median {np.median(v):.3f}  min {min(v):.3f}  max {max(v):.3f}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--work", type=Path, default=Path("/tmp/pockettts-bench-mimi"))
    ap.add_argument("--rounds", type=int, default=16)
    ap.add_argument("--calls", type=int, default=100)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--frames", help="time calls of these many frames, e.g. 1,2,4")
    ap.add_argument("--evict", type=int, default=0, help="MB read between calls (--frames)")
    ap.add_argument("--matmuls", action="store_true", help="each weight MatMul alone")
    ap.add_argument("--matmul-frames", type=int, default=2)
    args = ap.parse_args()
    folders = build(args.work)
    if args.frames:
        frames_per_call(args, folders["now"])
        return
    if args.matmuls:
        compare_matmuls(folders["now"], args)
        return
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
