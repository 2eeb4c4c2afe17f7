"""Per-row dynamic int8 (``quantise_rows_int8``), the batched graphs' int8, on a small graph.

Real ONNX Runtime sessions: a row's result must be the same bits alone and in
any batch, equal to an integer emulation of the form (so no int16 pair sum
saturated on the way), and close to float.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from pocketcli.packs.graph_files import save_graph
from pocketcli.packs.onnx_graph import OPSET, GraphBuilder
from pocketcli.packs.quantize import ROW_WEIGHT_MAX, quantise_rows_int8
from pocketcli.packs.rope import ROPE_SWAP
from tests.support.snr import snr_db

K, N = 256, 96


def _weights(rng: np.random.Generator) -> dict[str, np.ndarray]:
    w = {
        "a": (rng.standard_normal((N, K)) * 0.05).astype(np.float32),
        "b": (rng.standard_normal((N, K)) * 0.05).astype(np.float32),
        "swap": np.eye(N, dtype=np.float32)[::-1].copy(),
    }
    w["a"][:, :] = np.abs(w["a"])  # all positive: pairs of large products in one column
    return w


def _graph(w: dict[str, np.ndarray], path: Path) -> None:
    """Two weight MatMuls reading one activation ``[rows, 1, K]``, and RoPE's swap."""
    g = GraphBuilder("rows")
    x = g.input("x", np.float32, ["rows", 1, K])
    a = g.linear(x, w["a"], None, "a")
    b = g.linear(x, w["b"], None, "b")
    swapped = g.op("MatMul", [b, g.weight(f"{ROPE_SWAP}__0", w["swap"])])
    g.output(g.op("Add", [a, swapped]), "y", np.float32, ["rows", 1, N])
    save_graph(g.model(), path)


def _emulated(x: np.ndarray, w: dict[str, np.ndarray]) -> np.ndarray:
    """The per-row form in numpy, summed in int64 (nothing can saturate)."""
    s = np.maximum(np.abs(x).max(-1, keepdims=True) * np.float32(1 / 127), np.float32(1e-30))
    xq = (np.clip(np.round(x / s) + 128, 0, 255) - 128).astype(np.int64)
    out = []
    for name in ("a", "b"):
        weight = w[name].T
        peak = np.abs(weight).max(0)
        ws = np.where(peak > 0, peak / ROW_WEIGHT_MAX, 1.0).astype(np.float32)
        wq = np.clip(np.round(weight / ws), -ROW_WEIGHT_MAX, ROW_WEIGHT_MAX).astype(np.int64)
        out.append((xq @ wq).astype(np.float32) * ws * s)  # MatMulIntegerToFloat, then s
    return out[0] + out[1] @ w["swap"]


@pytest.fixture(scope="module")
def graphs(tmp_path_factory) -> tuple[ort.InferenceSession, Path, dict[str, np.ndarray]]:
    folder = tmp_path_factory.mktemp("rows")
    w = _weights(np.random.default_rng(3))
    _graph(w, folder / "f32.onnx")
    quantise_rows_int8(folder / "f32.onnx", folder / "int8.onnx")
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    session = ort.InferenceSession(
        str(folder / "int8.onnx"), options, providers=["CPUExecutionProvider"]
    )
    return session, folder / "int8.onnx", w


def _rows(rng: np.random.Generator) -> np.ndarray:
    """Eight rows of very different sizes; the last is all at its maximum (every
    quantised value 255, the case that saturates int16 pair sums with +-127 weights)."""
    x = rng.standard_normal((8, 1, K)).astype(np.float32)
    x *= np.float32(10.0) ** np.arange(-3, 5, dtype=np.float32)[:, None, None]
    x[-1] = 2.5
    return x


def test_a_row_gives_the_same_bits_alone_and_in_any_batch(graphs) -> None:
    session, _, _ = graphs
    x = _rows(np.random.default_rng(0))
    batch = session.run(None, {"x": x})[0]
    for i in range(len(x)):
        alone = session.run(None, {"x": x[i : i + 1]})[0]
        assert np.array_equal(alone[0], batch[i]), f"row {i}"
    three = session.run(None, {"x": x[[5, 0, 7]]})[0]
    assert np.array_equal(three, batch[[5, 0, 7]])


def test_it_equals_the_integer_emulation_and_stays_close_to_float(graphs) -> None:
    session, _, w = graphs
    x = _rows(np.random.default_rng(1))
    got = session.run(None, {"x": x})[0]
    assert np.array_equal(got, _emulated(x, w))
    exact = x @ w["a"].T + (x @ w["b"].T) @ w["swap"]
    # Every row as close as the others, whatever its size (one scale per call would
    # round the small rows to nothing): measured 34 to 57 dB.
    for i in range(len(x)):
        assert 30.0 <= snr_db(exact[i], got[i]) < 120, f"row {i}"


def test_the_graph_shares_one_quantisation_per_activation(graphs) -> None:
    _, path, _ = graphs
    model = onnx.load(str(path))
    ops = Counter(n.op_type for n in model.graph.node)
    # One product node per MatMul (issue 34: ONNX Runtime's MatMulIntegerToFloat, not
    # MatMulInteger, Cast and Mul), one quantisation per activation.
    assert ops["MatMulIntegerToFloat"] == 2 and ops["Abs"] == 1 and ops["ReduceMax"] == 1
    assert not {"MatMulInteger", "Cast"} & set(ops)
    # RoPE's swap stays a float MatMul on its float weight; the others' floats are gone.
    floats = {t.name for t in model.graph.initializer if t.data_type == onnx.TensorProto.FLOAT}
    assert ops["MatMul"] == 1 and f"{ROPE_SWAP}__0" in floats
    assert not {"a.weight_t", "b.weight_t"} & floats
    assert 2 * 255 * ROW_WEIGHT_MAX < 2**15  # no int16 pair sum can saturate, on any CPU
    for t in model.graph.initializer:
        if t.data_type == onnx.TensorProto.INT8:
            q = onnx.numpy_helper.to_array(t)
            assert np.abs(q).max() == ROW_WEIGHT_MAX  # 7 bits, each column at full scale
    opsets = {o.domain: o.version for o in model.opset_import}
    assert opsets == {"": OPSET, "com.microsoft": 1}
