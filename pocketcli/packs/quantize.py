"""Weight quantisation of built graphs: dynamic int8 and 4- or 8-bit blocks (MatMulNBits).

Only MatMuls whose second input is a weight are quantised; attention
products between activations stay in float. int8 quantises activations on
the fly (MatMulInteger); int4 keeps activations in float and stores weights
as 4-bit blocks (MatMulNBits with accuracy level 4, the fast kernel on CPUs).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import onnx

from pocketcli.errors import UserError
from pocketcli.packs.graph_files import save_graph
from pocketcli.packs.rope import ROPE_SWAP

INT4_BLOCK_SIZE = 32
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
    """8-bit weight blocks (MatMulNBits, bits=8) for the scheduler's batched graphs.

    ``quantise_int8`` scales the activations of a whole call by one number, so in a
    batch a row's result would depend on the other rows' values. MatMulNBits keeps
    activations in float (at accuracy level 4 it quantises them per row and per
    block of 32), so every row of a batch is computed as if it were alone.
    """
    quantise_int4(src, dst, bits=8)
