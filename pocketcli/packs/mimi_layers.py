"""Pieces shared by the Mimi decoder and encoder graphs.

Both Mimi transformers (decoder side, streaming; encoder side, the whole
prompt at once) have the same layers and differ only in how a query finds
its keys: a window carried between calls, or blocks of the prompt itself.
So the layer stack is written once here and the attention core is passed in.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from pocketcli.config import MimiTransformerConfig
from pocketcli.packs.onnx_graph import GraphBuilder
from pocketcli.packs.rope import apply_rope

Weights = dict[str, np.ndarray]
# (layer name, q, k, v) with q/k/v [heads, T, head_dim] -> attention output [heads, T, head_dim]
Attend = Callable[[str, str, str, str], str]


def conv_weight(w: Weights, prefix: str) -> tuple[np.ndarray, np.ndarray | None]:
    return w[f"{prefix}.weight"], w.get(f"{prefix}.bias")


def elu(g: GraphBuilder, x: str) -> str:
    """ELU (alpha 1) as ``max(x, exp(min(x, 0)) - 1)``: four vectorised passes run in
    under half the time of ONNX Runtime's own Elu, which dominated the decoder's
    elementwise work. Exact for both signs, since ``exp(x) - 1 > x`` for ``x < 0``."""
    zero, one = g.const(0.0), g.const(1.0)
    below = g.op("Sub", [g.op("Exp", [g.op("Min", [x, zero])]), one])
    return g.op("Max", [x, below])


def mimi_transformer(
    g: GraphBuilder,
    x: str,
    w: Weights,
    prefix: str,
    cfg: MimiTransformerConfig,
    name: str,
    cos: str,
    sin: str,
    attend: Attend,
    batched: bool = False,
) -> str:
    """The ProjectedTransformer of pocket-tts on ``x [1, T, input_dim]``.

    Pre-norm layers with LayerScale on both branches, GELU-tanh FFN, no
    biases; RoPE from ``cos``/``sin`` on q and k before ``attend``.
    ``batched``: ``x [B, T, input_dim]``, rows independent; ``cos``/``sin``
    are then ``[B * T, 1, head_dim]`` (row-major) and ``attend`` gets and
    returns ``[B, heads, T, head_dim]``.
    """
    d, heads = cfg.d_model, cfg.num_heads
    head_dim = d // heads
    if batched:  # [B * T, H, Dh] -> [B, H, T, Dh]; back: [B, T, d]
        rows = g.concat([g.shape_dim(x, 0), g.const([-1, heads, head_dim], np.int64)], axis=0)

        def heads_first(t: str) -> str:
            return g.transpose(g.op("Reshape", [t, rows]), [0, 2, 1, 3])

        def heads_back(t: str) -> str:
            return g.reshape(g.transpose(t, [0, 2, 1, 3]), [0, -1, d])
    else:

        def heads_first(t: str) -> str:
            return g.transpose(t, [1, 0, 2])  # [H, T, Dh]

        def heads_back(t: str) -> str:
            return g.reshape(g.transpose(t, [1, 0, 2]), [1, -1, d])

    if f"{prefix}.input_proj.weight" in w:
        x = g.linear(x, w[f"{prefix}.input_proj.weight"], None, f"{name}.input_proj")
    for i in range(cfg.num_layers):
        lp = f"{prefix}.transformer.layers.{i}"
        ln = f"{name}.l{i}"
        h = g.layer_norm(x, w[f"{lp}.norm1.weight"], w[f"{lp}.norm1.bias"], 1e-5, f"{ln}.norm1")
        qkv = g.linear(h, w[f"{lp}.self_attn.in_proj.weight"], None, f"{ln}.in_proj")
        q, k, v = g.split(qkv, [d, d, d], axis=2)
        q = heads_first(apply_rope(g, q, cos, sin, heads, head_dim))
        k = heads_first(apply_rope(g, k, cos, sin, heads, head_dim))
        v = heads_first(g.reshape(v, [-1, heads, head_dim]))
        attn = heads_back(attend(ln, q, k, v))
        attn = g.linear(attn, w[f"{lp}.self_attn.out_proj.weight"], None, f"{ln}.out_proj")
        x = g.op("Add", [x, _layer_scale(g, w, f"{lp}.layer_scale_1.scale", attn)])
        h = g.layer_norm(x, w[f"{lp}.norm2.weight"], w[f"{lp}.norm2.bias"], 1e-5, f"{ln}.norm2")
        h = g.gelu_tanh(g.linear(h, w[f"{lp}.linear1.weight"], None, f"{ln}.linear1"))
        h = g.linear(h, w[f"{lp}.linear2.weight"], None, f"{ln}.linear2")
        x = g.op("Add", [x, _layer_scale(g, w, f"{lp}.layer_scale_2.scale", h)])
    if f"{prefix}.output_projs.0.weight" in w:
        x = g.linear(x, w[f"{prefix}.output_projs.0.weight"], None, f"{name}.output_proj")
    return x


def _layer_scale(g: GraphBuilder, w: Weights, key: str, x: str) -> str:
    """Per-channel LayerScale; a config without layer_scale has no such tensor."""
    return g.op("Mul", [x, g.const(w[key])]) if key in w else x
