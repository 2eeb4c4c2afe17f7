"""What a lone stream's FlowLM step cannot go below on this machine (issue 34, target 2).

A one-row FlowLM step reads every weight of the FlowLM once: at int8 that is the six
layers' 72 MB, more than the L3 of the machines we run on, so the step waits on memory.
This script measures that floor from its parts, in one run, with the load average:

- the machine's streaming read rate (numpy summing 75 MB and 8 MB arrays);
- a chain of MatMuls shaped like the FlowLM's layers (d_model, 3 x d_model, the FFN), built
  in float and rewritten by the pack builder's own per-row int8 pass
  (``packs.quantize.quantise_rows_int8``, the form every pack's batched step has), for 1, 2
  and all of the layers: CPU-ms per call at 1 and 8 rows, and the bytes read per ms;
- the same chain on ONNX Runtime's ``MatMulNBits`` (blocks of 32, int8 compute; the packs'
  ``quantise_int4`` with 8 and 4 bits): what another int8 kernel and half the bytes give.

    python benchmarks/bench_floor.py --rounds 3

The chain has no attention, norms or activations: it is the step's weight traffic alone.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from pocketcli.packs.quantize import quantise_int4, quantise_rows_int8

D_MODEL, FFN, LAYERS = 1024, 4096, 6  # the full-size English FlowLM


def _shapes(layers: int) -> list[tuple[int, int]]:
    return [(D_MODEL, 3 * D_MODEL), (D_MODEL, D_MODEL), (D_MODEL, FFN), (FFN, D_MODEL)] * layers


def _float_chain(layers: int, rng: np.random.Generator) -> onnx.ModelProto:
    """Each MatMul's output sliced or tiled to the next one's input width."""
    nodes, inits, x = [], [], "x"
    shapes = _shapes(layers)
    for i, (k, n) in enumerate(shapes):
        w = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)
        inits.append(numpy_helper.from_array(w, f"w{i}"))
        nodes.append(helper.make_node("MatMul", [x, f"w{i}"], [f"y{i}"], name=f"mm{i}"))
        x = _to_width(nodes, inits, f"y{i}", n, shapes[(i + 1) % len(shapes)][0], i)
    graph = helper.make_graph(
        nodes,
        "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["rows", D_MODEL])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, ["rows", D_MODEL])],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


def _to_width(nodes: list, inits: list, y: str, have: int, want: int, i: int) -> str:
    if have == want:
        return y
    if have > want:
        for name, value in ((f"s{i}", [0]), (f"e{i}", [want]), (f"a{i}", [1])):
            inits.append(numpy_helper.from_array(np.array(value, np.int64), name))
        nodes.append(helper.make_node("Slice", [y, f"s{i}", f"e{i}", f"a{i}"], [f"z{i}"]))
    else:
        nodes.append(helper.make_node("Concat", [y] * (want // have), [f"z{i}"], axis=1))
    return f"z{i}"


def _session(path: Path) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _cpu_ms(fn, calls: int) -> float:
    for _ in range(3):
        fn()
    start = time.process_time()
    for _ in range(calls):
        fn()
    return (time.process_time() - start) / calls * 1e3


def _read_rate() -> list[str]:
    lines = []
    for megabytes in (75, 8):
        words = np.ones(megabytes * 1_000_000 // 8, np.int64)
        ms = _cpu_ms(words.sum, 20)
        lines.append(f"numpy sum of {megabytes} MB: {ms:.2f} CPU-ms, {megabytes / ms:.1f} GB/s")
    return lines


def _forms(work: Path, layers: int, rng: np.random.Generator) -> dict[str, tuple[Path, float]]:
    """The chain of ``layers`` layers in each form: its file and its weight megabytes."""
    model = _float_chain(layers, rng)
    src = work / f"float{layers}.onnx"
    onnx.save(model, src)
    params = sum(k * n for k, n in _shapes(layers)) / 1e6
    forms = {"per-row int8 (packs)": (work / f"rows{layers}.onnx", params)}
    quantise_rows_int8(src, forms["per-row int8 (packs)"][0])
    for bits in (8, 4):  # the packs' N-bit quantiser (ONNX Runtime's), blocks of 32
        path = work / f"nbits{bits}_{layers}.onnx"
        quantise_int4(src, path, block_size=32, bits=bits)
        forms[f"MatMulNBits {bits}-bit"] = (path, params * bits / 8)
    return forms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print(f"load average {os.getloadavg()[0]:.1f}; one intra-op thread; CPU-ms per call,")
    print("best of the rounds (forms alternating); GB/s = weight bytes / time")
    for line in _read_rate():
        print(line)
    with tempfile.TemporaryDirectory() as tmp:
        for layers in (1, 2, LAYERS):
            forms = _forms(Path(tmp), layers, rng)
            sessions = {name: (_session(path), mb) for name, (path, mb) in forms.items()}
            for rows in (1, 8):
                x = rng.standard_normal((rows, D_MODEL)).astype(np.float32)
                best = dict.fromkeys(sessions, float("inf"))
                for _ in range(args.rounds):
                    for name, (session, _) in sessions.items():
                        ms = _cpu_ms(lambda s=session, x=x: s.run(None, {"x": x}), args.calls)
                        best[name] = min(best[name], ms)
                for name, (_, mb) in sessions.items():
                    print(
                        f"{layers} layer(s) {rows} row(s) {name:22s} {mb:6.1f} MB"
                        f" {best[name]:7.2f} CPU-ms {mb / best[name]:5.1f} GB/s"
                    )
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
