"""``quantise_rows_int8`` on a weight that another node reads too (a tied embedding, a
weight that is also an output): the MatMul takes the int8 form and the float weight
stays for the other reader. A real ONNX Runtime session on the rewritten graph."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from pocketcli.packs.graph_files import save_graph
from pocketcli.packs.onnx_graph import OPSET
from pocketcli.packs.quantize import quantise_rows_int8

K, N = 64, 32


def test_a_weight_another_node_reads_is_kept_for_it(tmp_path) -> None:
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((K, N)) * 0.05).astype(np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w"], ["y"], name="mm"),
            helper.make_node("Identity", ["w"], ["w_out"], name="tied"),
        ],
        "shared",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["rows", K])],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, ["rows", N]),
            helper.make_tensor_value_info("w_out", TensorProto.FLOAT, [K, N]),
        ],
        [numpy_helper.from_array(w, "w")],
    )
    src, dst = tmp_path / "float.onnx", tmp_path / "rows.onnx"
    save_graph(helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)]), src)
    quantise_rows_int8(src, dst)
    x = rng.standard_normal((3, K)).astype(np.float32)
    y, w_out = ort.InferenceSession(str(dst), providers=["CPUExecutionProvider"]).run(
        None, {"x": x}
    )
    assert np.array_equal(w_out, w)  # the other reader still has the float weight
    assert np.abs(y - x @ w).max() < 0.05 * np.abs(x @ w).max()  # the int8 MatMul
