"""Rotary position embeddings, shared by every transformer graph (FlowLM and Mimi).

pocket-tts rotates interleaved pairs ``(x[2i], x[2i+1])`` by the angle
``position * freq[i]``. Written as ``x * cos + (x @ R) * sin`` with full-width
tables (each angle repeated for both members of its pair) and ``R`` the fixed
matrix that maps each pair ``(a, b)`` to ``(-b, a)``, a rotation is four ops,
not the dozen of a split into real and imaginary halves: ONNX Runtime's cost
per op matters at one frame per call. ``R`` holds one +-1 per column, so the
product is exact and the result equals the split form bit for bit.
"""

from __future__ import annotations

import numpy as np
import onnx

from pocketcli.packs.onnx_graph import GraphBuilder

# Name prefix of the swap matrix: quantisers must leave it alone (it is exact in float,
# and int8 would round the activations it rotates).
ROPE_SWAP = "rope_swap"


def rope_tables(
    g: GraphBuilder, positions: str, head_dim: int, max_period: float
) -> tuple[str, str]:
    """cos/sin ``[T, 1, head_dim]`` for int64 positions ``[T]``, in float32 as torch does."""
    freqs = np.exp(
        np.arange(head_dim // 2, dtype=np.float32) * np.float32(-np.log(max_period) * 2 / head_dim)
    ).astype(np.float32)
    t = g.op("Cast", [positions], to=onnx.TensorProto.FLOAT)
    angles = g.op("Mul", [g.unsqueeze(t, [1]), g.const(np.repeat(freqs, 2))])
    return (g.unsqueeze(g.op("Cos", [angles]), [1]), g.unsqueeze(g.op("Sin", [angles]), [1]))


def apply_rope(g: GraphBuilder, x: str, cos: str, sin: str, heads: int, head_dim: int) -> str:
    """Rotates ``x [T, heads * head_dim]`` (or ``[1, T, ...]``) into ``[T, heads, head_dim]``."""
    swap = np.zeros((head_dim, head_dim), np.float32)
    pairs = np.arange(0, head_dim, 2)
    swap[pairs + 1, pairs] = -1.0  # first of a pair takes -second
    swap[pairs, pairs + 1] = 1.0  # second of a pair takes +first
    x = g.reshape(x, [-1, heads, head_dim])
    swapped = g.op("MatMul", [x, g.const(swap, hint=ROPE_SWAP)])
    return g.op("Add", [g.op("Mul", [x, cos]), g.op("Mul", [swapped, sin])])
