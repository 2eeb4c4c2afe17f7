"""Weight quantisation of built graphs: dynamic int8, per-row int8 and 4-bit blocks.

Only MatMuls whose second input is a weight are quantised; attention
products between activations stay in float. int8 quantises activations on
the fly (MatMulInteger), one scale per call; the batched graphs' int8 scales
each row on its own (``quantise_rows_int8``); int4 keeps activations in float
and stores weights as 4-bit blocks (MatMulNBits with accuracy level 4, the
fast kernel on CPUs).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from pocketcli.errors import UserError
from pocketcli.packs.graph_files import save_graph
from pocketcli.packs.rope import ROPE_SWAP

INT4_BLOCK_SIZE = 32
MS = "com.microsoft"  # ONNX Runtime's contrib ops
# Weights whose MatMul stays float. The Mimi decoder's last conv writes the samples
# themselves: rounding its input to 8 bits is audible hiss (measured on the full-size
# decoder: SNR against fp32 17 dB with it quantised, 27 dB without), and it is only
# 64 x 3 weights, so keeping it float costs nothing. RoPE's swap matrix is exact in
# float and tiny; quantising would round every query and key it rotates.
FLOAT_WEIGHTS = frozenset({"dec.conv_out.weight"})
FLOAT_WEIGHT_PREFIXES = (ROPE_SWAP,)


def float_matmuls(graph: onnx.GraphProto, stays_float: Callable[[str], bool]) -> list[str]:
    """Names of the MatMuls whose second input is a weight ``stays_float`` names."""
    return [
        n.name
        for n in graph.node
        if n.op_type == "MatMul" and len(n.input) == 2 and stays_float(n.input[1])
    ]


def _float_nodes(path: Path) -> list[str]:
    """Names of the MatMuls that multiply by a weight that stays float."""
    graph = onnx.load(str(path), load_external_data=False).graph
    return float_matmuls(
        graph, lambda name: name in FLOAT_WEIGHTS or name.startswith(FLOAT_WEIGHT_PREFIXES)
    )


@contextmanager
def _quiet_root_logger() -> Iterator[None]:
    """ORT's quantisers log advice on the root logger; users need none of it."""
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        yield
    finally:
        root.setLevel(level)


def int8_matmuls(src: Path, dst: Path, keep_float: list[str], **options: Any) -> None:
    """ONNX Runtime's dynamic int8 quantisation of the MatMuls of ``src`` (but the
    ``keep_float`` ones), quietly; ``options`` go to ``quantize_dynamic``."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with _quiet_root_logger():
        quantize_dynamic(
            str(src),
            str(dst),
            weight_type=QuantType.QInt8,
            op_types_to_quantize=["MatMul"],
            nodes_to_exclude=keep_float,
            **options,
        )


def quantise_int8(src: Path, dst: Path) -> None:
    # reduce_range: 7-bit weights. Without VNNI (AVX2, most x86 CPUs) ONNX Runtime's
    # u8 x s8 kernel sums pairs of products in int16, which saturates with full-range
    # weights: the full-size Mimi decoder measured 26.6 dB SNR against fp32 without
    # it, 39.7 dB with it, at the same speed.
    int8_matmuls(
        src,
        dst,
        _float_nodes(src),
        reduce_range=True,
        use_external_data_format=True,
        extra_options={"MatMulConstBOnly": True},
    )


def quantise_int4(
    src: Path,
    dst: Path,
    block_size: int = INT4_BLOCK_SIZE,
    bits: int = 4,
    accuracy_level: int | None = 4,
) -> None:
    """MatMul weights as ``bits``-bit blocks (MatMulNBits). ``accuracy_level`` 4 lets the
    kernel quantise the activations to int8 (per row and block) where ONNX Runtime has
    such a kernel (its x86 and Arm CPU kernels; not its WASM build); None keeps them
    float32 everywhere."""
    try:
        from onnxruntime.quantization.matmul_nbits_quantizer import (
            DefaultWeightOnlyQuantConfig,
            MatMulNBitsQuantizer,
        )
    except ImportError as exc:
        raise UserError(
            f"int4 packs need onnxruntime's 4-bit quantiser ({exc}); pip install onnx-ir"
        ) from None
    model = onnx.load(str(src))
    config = DefaultWeightOnlyQuantConfig(
        block_size=block_size, is_symmetric=True, accuracy_level=accuracy_level, bits=bits
    )
    with _quiet_root_logger():
        quantiser = MatMulNBitsQuantizer(
            model, algo_config=config, nodes_to_exclude=_float_nodes(src)
        )
        quantiser.process()
    save_graph(quantiser.model.model, dst)


def quantise_rows_int8(src: Path, dst: Path) -> None:
    """Per-row dynamic int8 for the scheduler's batched graphs.

    ``quantise_int8`` scales the activations of a whole call by one number, so in a
    batch a row's result would depend on the other rows' values. Here each row (the
    last axis of a MatMul's input) gets its own scale, and the products are summed in
    integers, so a row's result is the same bits alone and in any batch:

        s  = max(max(|x|, axis=-1) / 127, eps)
        xu = uint8(clip(round(x / s) + 128, 0, 255))   (QuantizeLinear(x / s, 1, 128))
        y  = MatMulIntegerToFloat(xu, Wq, 1, ws, 128) * s   (float(integer sums) * ws * s)

    with ``Wq`` each weight column rounded to +-63 by its own scale ``ws``: without VNNI
    (AVX2) ONNX Runtime's u8 x s8 kernel adds pairs of products in int16, which
    saturates with +-127 weights (255 x 63 x 2 fits; 255 x 127 x 2 does not): sums
    then drift from the exact integer ones (0.2 off on a 1024 x 4096 product). MatMuls
    reading one tensor share its quantisation. ONNX ops at the graph's own opset, but
    the product: ONNX Runtime's contrib ``MatMulIntegerToFloat`` (its CPU kernel), one
    node for ``MatMulInteger``, ``Cast`` and the weight scale's ``Mul`` (graphs built
    before 2026-12-03 have those three; the same rows, rounded in another order).
    """
    model = onnx.load(str(src))
    _rows_int8(model.graph, set(_float_nodes(src)))
    if not any(o.domain == MS for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid(MS, 1))
    save_graph(model, dst)


def _rows_int8(graph: onnx.GraphProto, keep_float: set[str]) -> None:
    """Rewrites ``graph``'s weight MatMuls (but ``keep_float``) into the per-row form."""
    weights = {t.name: t for t in graph.initializer}
    readers: dict[str, int] = {}
    for node in graph.node:
        for name in node.input:
            readers[name] = readers.get(name, 0) + 1

    def const(name: str, value: np.ndarray) -> str:
        if name not in weights:
            weights[name] = numpy_helper.from_array(value, name)
            graph.initializer.append(weights[name])
        return name

    def node(op: str, inputs: list[str], out: str, **attrs: Any) -> onnx.NodeProto:
        return helper.make_node(op, inputs, [out], name=out, **attrs)

    quantised: dict[str, tuple[str, str]] = {}  # activation -> (its uint8 form, row scales)
    nodes: list[onnx.NodeProto] = []
    dropped: set[str] = set()
    for n in graph.node:
        w = weights.get(n.input[1]) if n.op_type == "MatMul" else None
        if w is None or n.name in keep_float or len(w.dims) != 2:
            nodes.append(n)
            continue
        x = n.input[0]
        if x not in quantised:
            p = f"{x}.rowq"
            nodes += [
                node("Abs", [x], f"{p}.abs"),
                node("ReduceMax", [f"{p}.abs", const("rowq.last_axis", _LAST_AXIS)], f"{p}.max"),
                node("Mul", [f"{p}.max", const("rowq.inv127", _INV_127)], f"{p}.s0"),
                node("Max", [f"{p}.s0", const("rowq.eps", _EPS)], f"{p}.scale"),
                node("Div", [x, f"{p}.scale"], f"{p}.div"),
                # round half to even, + 128, saturated to uint8: one op, not four
                # (Round, Add, Clip, Cast give the same bits; ONNX Runtime's cost per op
                # is much of a row's work)
                node(
                    "QuantizeLinear",
                    [f"{p}.div", const("rowq.one", _ONE), const("rowq.zp128", _U8_128)],
                    f"{p}.u8",
                ),
            ]
            quantised[x] = (f"{p}.u8", f"{p}.scale")
        xu, scale = quantised[x]
        wq, ws = _column_int8(numpy_helper.to_array(w))
        p = f"{n.name}.rowq"
        wq_name = const(f"{w.name}.rowq_int8", wq)
        ws_name = const(f"{w.name}.rowq_scale", ws)
        # A node costs ONNX Runtime a kernel launch and a pass over its output; one
        # product node instead of three: full-size batched step 10.97 -> 9.91 CPU-ms at
        # one row, 20.0 -> 18.4 at eight (benchmarks/README.md, issue 34).
        product = [xu, wq_name, const("rowq.one", _ONE), ws_name, const("rowq.zp128", _U8_128)]
        nodes += [
            helper.make_node(
                "MatMulIntegerToFloat", product, [f"{p}.cols"], name=f"{p}.cols", domain=MS
            ),
            node("Mul", [f"{p}.cols", scale], n.output[0]),
        ]
        readers[w.name] -= 1
        if readers[w.name] == 0:
            dropped.add(w.name)
    del graph.node[:]
    graph.node.extend(nodes)
    kept = [t for t in graph.initializer if t.name not in dropped]
    del graph.initializer[:]
    graph.initializer.extend(kept)


_LAST_AXIS = np.array([-1], np.int64)
_INV_127 = np.array(1 / 127, np.float32)
_EPS = np.array(1e-30, np.float32)
_ONE = np.array(1, np.float32)
_U8_128 = np.array(128, np.uint8)
ROW_WEIGHT_MAX = 63


def _column_int8(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``w [K, N]`` as int8 within +-ROW_WEIGHT_MAX and one float scale per column."""
    peak = np.abs(w).max(axis=0)
    scale = np.where(peak > 0, peak / ROW_WEIGHT_MAX, 1.0).astype(np.float32)
    q = np.clip(np.round(w / scale), -ROW_WEIGHT_MAX, ROW_WEIGHT_MAX).astype(np.int8)
    return q, scale
