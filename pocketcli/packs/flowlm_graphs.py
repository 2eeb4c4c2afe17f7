"""ONNX graphs of the FlowLM: text embedding, backbone step with KV cache, flow head.

The backbone graph never receives or returns the whole KV cache. The host
keeps one preallocated cache per layer and binds it by pointer; the graph
reads the valid part (positions below ``position``, the rest is masked out)
and returns only the keys and values of the positions it just processed,
which the host writes into place. So a frame costs a read of the cache, never
a copy of it.

Cache layouts (per layer): keys ``[kv_heads, head_dim, capacity]`` so that
``q @ keys`` needs no transpose, values ``[kv_heads, capacity, head_dim]``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx

from pocketcli.config import FlowLMConfig, FlowTransformerConfig
from pocketcli.packs.onnx_graph import GraphBuilder
from pocketcli.packs.rope import apply_rope, rope_tables
from pocketcli.packs.state_spec import HEAD_SCORES, PRESENT_KEY, PRESENT_VALUE

Weights = dict[str, np.ndarray]


def build_text_embedding(w: Weights, cfg: FlowLMConfig) -> onnx.ModelProto:
    g = GraphBuilder("text_embedding")
    ids = g.input("token_ids", np.int64, [1, "tokens"])
    table = g.weight("conditioner.embed.weight", w["flow_lm.conditioner.embed.weight"])
    emb = g.op("Gather", [table, ids], axis=0)
    if cfg.lookup_table.rank is not None:
        emb = g.linear(emb, w["flow_lm.conditioner.proj.weight"], None, "conditioner.proj")
    g.output(emb, "embeddings", np.float32, [1, "tokens", cfg.transformer.d_model])
    return g.model()


def attention_inputs(
    g: GraphBuilder, w: Weights, t: FlowTransformerConfig, i: int, x: str, cos: str, sin: str
) -> tuple[str, str, str]:
    """Layer ``i``'s pre-norm and projections on ``x [1, T, d]`` (or ``[B, T, d]``), RoPE applied.

    Returns q ``[T, heads, head_dim]``, k and v ``[T, kv_heads, head_dim]``;
    how they meet the cache is the caller's (each graph keeps its own cache).
    """
    p = f"flow_lm.transformer.layers.{i}"
    heads, kv_heads, head_dim = t.num_heads, t.kv_heads, t.head_dim
    h = g.layer_norm(x, w[f"{p}.norm1.weight"], w[f"{p}.norm1.bias"], 1e-5, f"l{i}.norm1")
    qkv = g.linear(h, w[f"{p}.self_attn.in_proj.weight"], None, f"l{i}.in_proj")
    q, k, v = g.split(qkv, [heads * head_dim, kv_heads * head_dim, kv_heads * head_dim], 2)
    q = apply_rope(g, q, cos, sin, heads, head_dim)  # [T, H, Dh]
    k = apply_rope(g, k, cos, sin, kv_heads, head_dim)  # [T, Hkv, Dh]
    v = g.reshape(v, [-1, kv_heads, head_dim])
    return q, k, v


def attention_output_and_ffn(g: GraphBuilder, w: Weights, i: int, x: str, attn: str) -> str:
    """Layer ``i`` after attention: output projection, residual, pre-norm FFN, residual."""
    p = f"flow_lm.transformer.layers.{i}"
    x = g.op(
        "Add", [x, g.linear(attn, w[f"{p}.self_attn.out_proj.weight"], None, f"l{i}.out_proj")]
    )
    h = g.layer_norm(x, w[f"{p}.norm2.weight"], w[f"{p}.norm2.bias"], 1e-5, f"l{i}.norm2")
    h = g.gelu_tanh(g.linear(h, w[f"{p}.linear1.weight"], None, f"l{i}.linear1"))
    return g.op("Add", [x, g.linear(h, w[f"{p}.linear2.weight"], None, f"l{i}.linear2")])


def output_heads(g: GraphBuilder, w: Weights, cfg: FlowLMConfig, last: str) -> tuple[str, str]:
    """Backbone output of the last position ``[.., d]`` -> (z after out_norm/z_proj, EOS logit)."""
    z = g.layer_norm(
        last, w["flow_lm.out_norm.weight"], w["flow_lm.out_norm.bias"], 1e-5, "out_norm"
    )
    if cfg.z_dim is not None:
        z = g.linear(z, w["flow_lm.z_proj.weight"], None, "z_proj")
    eos = g.linear(z, w["flow_lm.out_eos.weight"], w["flow_lm.out_eos.bias"], "out_eos")
    return z, eos


# Word timings (issue 35): the batched step of a config with ``timestamp_heads`` gives those
# heads' scaled attention logits of each row's last position over every key (new keys
# first, then the cache) as one more output, ``head_scores [B, heads, T + C]``: a few copies
# of one row per head, fetched only when a stream asks for words. The host softmaxes the
# text positions (``pocketcli.words``). Packs built with it run every FlowLM call there.
# The output's name lives in state_spec, which the runtime reads without importing onnx.


def head_taps(g: GraphBuilder, scores: str, layer: int, cfg: FlowLMConfig) -> list[str]:
    """The last query row of ``scores [B, Hkv, G, T, keys]`` for each of layer ``layer``'s
    word-timing heads: ``[B, 1, keys]`` each (raw, before the scale)."""
    group = cfg.transformer.num_heads // cfg.transformer.kv_heads
    taps = []
    for layer_of, head in cfg.timestamp_heads or ():
        if layer_of != layer:
            continue
        x = g.op("Gather", [scores, g.const([head // group], np.int64)], axis=1)
        x = g.op("Gather", [x, g.const([head % group], np.int64)], axis=2)
        x = g.op("Gather", [x, g.const([-1], np.int64)], axis=3)  # the last row
        taps.append(g.reshape(x, [0, 1, -1]))
    return taps


def head_scores_output(g: GraphBuilder, taps: list[str], scale: str) -> None:
    """Declares ``head_scores`` (heads in ``timestamp_heads`` order) when there are taps."""
    if taps:
        joined = g.op("Mul", [taps[0] if len(taps) == 1 else g.concat(taps, axis=1), scale])
        g.output(joined, HEAD_SCORES, np.float32, ["batch", len(taps), "keys"])


def build_flowlm_step(w: Weights, cfg: FlowLMConfig) -> onnx.ModelProto:
    """One call of the backbone on ``[embeddings, input_linear(latents)]``.

    Used for the voice prefill (embeddings = voice conditioning), the text
    prefill (embeddings = token embeddings) and every frame (one latent; NaN
    stands for the BOS latent). Outputs the normed backbone output of the last
    position (``z``), the raw EOS logit, and the new keys/values per layer.
    """
    t = cfg.transformer
    d, heads, kv_heads, head_dim = t.d_model, t.num_heads, t.kv_heads, t.head_dim
    group = heads // kv_heads
    g = GraphBuilder("flowlm_step")

    emb = g.input("embeddings", np.float32, [1, "n_embeddings", d])
    latents = g.input("latents", np.float32, [1, "n_latents", cfg.latent_dim])
    position = g.input("position", np.int64, [1])
    caches = [
        (
            g.input(f"key_cache_{i}", np.float32, [kv_heads, head_dim, "capacity"]),
            g.input(f"value_cache_{i}", np.float32, [kv_heads, "capacity", head_dim]),
        )
        for i in range(t.num_layers)
    ]

    bos = g.weight("bos_emb", w["flow_lm.bos_emb"])
    latents = g.op("Where", [g.op("IsNaN", [latents]), bos, latents])
    x = g.concat(
        [emb, g.linear(latents, w["flow_lm.input_linear.weight"], None, "input_linear")], axis=1
    )

    # Positions of the new rows, RoPE tables and the attention mask (shared by all layers).
    n_new = g.shape_dim(x, 1)
    capacity = g.shape_dim(caches[0][0], 2)
    new_index = g.op("Range", [g.const(0, np.int64), g.squeeze(n_new, [0]), g.const(1, np.int64)])
    cos, sin = rope_tables(g, g.op("Add", [new_index, position]), head_dim, t.max_period)

    cache_index = g.op(
        "Range", [g.const(0, np.int64), g.squeeze(capacity, [0]), g.const(1, np.int64)]
    )
    cache_visible = g.op("Less", [cache_index, position])
    rows_cols = g.concat([n_new, capacity], axis=0)
    cache_mask = g.op("Expand", [g.unsqueeze(cache_visible, [0]), rows_cols])
    causal = g.op("LessOrEqual", [g.unsqueeze(new_index, [0]), g.unsqueeze(new_index, [1])])
    mask = g.concat([cache_mask, causal], axis=1)
    split_sizes = g.concat([capacity, n_new], axis=0)
    scale = g.const(1.0 / np.sqrt(head_dim))
    minus_inf = g.const(-np.inf)

    for i, (key_cache, value_cache) in enumerate(caches):
        q, k, v = attention_inputs(g, w, t, i, x, cos, sin)
        q = g.transpose(g.reshape(q, [-1, kv_heads, group, head_dim]), [1, 2, 0, 3])
        new_keys = g.transpose(k, [1, 2, 0])  # [Hkv, Dh, T]
        new_values = g.transpose(v, [1, 0, 2])  # [Hkv, T, Dh]
        g.output(new_keys, f"new_keys_{i}", np.float32, [kv_heads, head_dim, "n_new"])
        g.output(new_values, f"new_values_{i}", np.float32, [kv_heads, "n_new", head_dim])

        scores = g.concat(
            [
                g.op("MatMul", [q, g.unsqueeze(key_cache, [1])]),
                g.op("MatMul", [q, g.unsqueeze(new_keys, [1])]),
            ],
            axis=3,
        )
        scores = g.op("Where", [mask, g.op("Mul", [scores, scale]), minus_inf])
        probs = g.op("Softmax", [scores], axis=-1)
        p_cache, p_new = g.op_multi("Split", [probs, split_sizes], 2, axis=3)
        attn = g.op(
            "Add",
            [
                g.op("MatMul", [p_cache, g.unsqueeze(value_cache, [1])]),
                g.op("MatMul", [p_new, g.unsqueeze(new_values, [1])]),
            ],
        )  # [Hkv, G, T, Dh]
        attn = g.reshape(g.transpose(attn, [2, 0, 1, 3]), [1, -1, heads * head_dim])
        x = attention_output_and_ffn(g, w, i, x, attn)

    last = g.reshape(g.slice(x, -1, np.iinfo(np.int64).max, axis=1), [1, d])
    z, eos = output_heads(g, w, cfg, last)
    g.output(z, "z", np.float32, [1, cfg.cond_dim])
    g.output(eos, "eos_logit", np.float32, [1, 1])
    return g.model()


def build_flowlm_step_batch(
    w: Weights, cfg: FlowLMConfig, fused: bool | None = None
) -> onnx.ModelProto:
    """``T`` new positions for each of ``B`` independent sequences: every FlowLM call of
    a pack that has it (the scheduler's batched frames, and a text or voice prefill as
    one row), so the one-sequence ``flowlm_step`` need not be loaded beside it.

    Row ``b`` appends ``[embeddings, input_linear(latents)]`` (NaN latent = BOS) at
    its own ``positions[b]``: its queries see its own cache row below ``positions[b]``
    and its new positions causally, so no row sees another's values. Outputs ``z [B,
    cond]`` and ``eos_logit [B, 1]`` of each row's last position, and per layer either:

    - fused (head size a multiple of 8; built since 2026-12-03): ``GroupQueryAttention``
      over each row's filled positions only; caches keys and values ``[B, Hkv, C, Dh]``,
      returned as ``present_key_i``/``present_value_i`` with the new positions written
      in (the runtime binds each to its input's buffer, so nothing is copied);
    - plain (packs built before, other head sizes): attention over the whole capacity,
      the rest masked out; caches keys ``[B, Hkv, Dh, C]``, values ``[B, Hkv, C, Dh]``;
      outputs each row's new keys ``[B, Hkv, Dh, T]`` and values ``[B, Hkv, T, Dh]``,
      which the runtime writes into place.
    """
    t = cfg.transformer
    d, kv_heads, head_dim = t.d_model, t.kv_heads, t.head_dim
    g = GraphBuilder("flowlm_step_batch")

    emb = g.input("embeddings", np.float32, ["batch", "n_embeddings", d])
    latents = g.input("latents", np.float32, ["batch", "n_latents", cfg.latent_dim])
    positions = g.input("positions", np.int64, ["batch"])
    if fused is None:  # the plain form only where the fused op cannot run
        fused = head_dim % GQA_HEAD_DIM_MULTIPLE == 0
    key_shape = ["capacity", head_dim] if fused else [head_dim, "capacity"]
    caches = [
        (
            g.input(f"key_cache_{i}", np.float32, ["batch", kv_heads, *key_shape]),
            g.input(f"value_cache_{i}", np.float32, ["batch", kv_heads, "capacity", head_dim]),
        )
        for i in range(t.num_layers)
    ]

    bos = g.weight("bos_emb", w["flow_lm.bos_emb"])
    latents = g.op("Where", [g.op("IsNaN", [latents]), bos, latents])
    x = g.concat(
        [emb, g.linear(latents, w["flow_lm.input_linear.weight"], None, "input_linear")], axis=1
    )  # [B, T, d]

    taps: list[str] = []
    scale = g.const(1.0 / np.sqrt(head_dim))
    if fused:
        setup = _fused_setup(g, t, x, positions)
        for i, caches_i in enumerate(caches):
            x = _fused_layer(g, w, cfg, i, x, caches_i, setup, taps)
    else:
        shared = _batch_attention_setup(g, t, x, positions, caches[0][0])
        for i, (key_cache, value_cache) in enumerate(caches):
            x = _batch_layer(g, w, t, i, x, key_cache, value_cache, shared, (cfg, taps))

    last = g.reshape(g.slice(x, -1, np.iinfo(np.int64).max, axis=1), [-1, d])
    z, eos = output_heads(g, w, cfg, last)
    g.output(z, "z", np.float32, ["batch", cfg.cond_dim])
    g.output(eos, "eos_logit", np.float32, ["batch", 1])
    head_scores_output(g, taps, scale)
    model = g.model()
    if fused:
        model.opset_import.append(onnx.helper.make_opsetid(MS_DOMAIN, 1))
    return model


# ONNX Runtime's fused attention with a KV cache (contrib ``GroupQueryAttention``, CPU
# kernel in the standard wheel): each row attends over its own filled positions only
# (``seqlens_k``), not the whole capacity, and with the cache bound as both its past and
# its present input and output (I/O binding), the op writes the new keys and values into
# the cache itself. The kernel needs a head size that is a multiple of 8 (every published
# config: 64); other configs get the plain form.
MS_DOMAIN = "com.microsoft"
GQA_HEAD_DIM_MULTIPLE = 8


@dataclass(frozen=True)
class _FusedAttention:
    """What every layer of the fused batched step shares."""

    cos: str
    sin: str
    seqlens: str  # int32 [B]: each row's last position (filled positions after the call, - 1)
    total: str  # int32 []: the longest row's length after the call
    total_1d: str  # the same, int64 [1]
    q_shape: str  # [B, T, heads * Dh]
    kv_shape: str  # [B, T, kv_heads * Dh]


def _fused_setup(
    g: GraphBuilder, t: FlowTransformerConfig, x: str, positions: str
) -> _FusedAttention:
    rows, n_new = g.shape_dim(x, 0), g.shape_dim(x, 1)
    new_index = g.op("Range", [g.const(0, np.int64), g.squeeze(n_new, [0]), g.const(1, np.int64)])
    at = g.op("Add", [g.unsqueeze(positions, [1]), g.unsqueeze(new_index, [0])])  # [B, T]
    cos, sin = rope_tables(g, g.reshape(at, [-1]), t.head_dim, t.max_period)
    last = g.op("Add", [positions, g.op("Sub", [n_new, g.const([1], np.int64)])])
    total = g.op("Add", [g.op("ReduceMax", [positions], keepdims=0), g.squeeze(n_new, [0])])
    return _FusedAttention(
        cos=cos,
        sin=sin,
        seqlens=g.op("Cast", [last], to=onnx.TensorProto.INT32),
        total=g.op("Cast", [total], to=onnx.TensorProto.INT32),
        total_1d=g.unsqueeze(total, [0]),
        q_shape=g.concat([rows, n_new, g.const([t.num_heads * t.head_dim], np.int64)], axis=0),
        kv_shape=g.concat([rows, n_new, g.const([t.kv_heads * t.head_dim], np.int64)], axis=0),
    )


def _fused_layer(
    g: GraphBuilder,
    w: Weights,
    cfg: FlowLMConfig,
    i: int,
    x: str,
    caches: tuple[str, str],
    s: _FusedAttention,
    taps: list[str],
) -> str:
    """Layer ``i`` of the fused batched step: its caches ``[B, Hkv, C, Dh]`` go in as the
    op's past and come out as ``present_key_i``/``present_value_i``, the same shape, with
    each row's new positions written at ``positions[b]`` (the runtime binds one buffer to
    both). Word-timing heads of this layer: ``_fused_taps``."""
    t = cfg.transformer
    q, k, v = attention_inputs(g, w, t, i, x, s.cos, s.sin)
    q = g.op("Reshape", [q, s.q_shape])
    outs = [g.fresh("attn"), PRESENT_KEY.format(i), PRESENT_VALUE.format(i)]
    g.nodes.append(
        onnx.helper.make_node(
            "GroupQueryAttention",
            [q, g.op("Reshape", [k, s.kv_shape]), g.op("Reshape", [v, s.kv_shape])]
            + [*caches, s.seqlens, s.total],
            outs,
            name=outs[0],
            domain=MS_DOMAIN,
            num_heads=t.num_heads,
            kv_num_heads=t.kv_heads,
            scale=float(1.0 / np.sqrt(t.head_dim)),
        )
    )
    for name in outs[1:3]:  # straight from the op: an Identity would copy the whole cache
        g.outputs.append(
            onnx.helper.make_tensor_value_info(
                name, onnx.TensorProto.FLOAT, ["batch", t.kv_heads, "capacity", t.head_dim]
            )
        )
    taps += _fused_taps(g, cfg, i, q, outs[1], s.total_1d)
    return attention_output_and_ffn(g, w, i, x, outs[0])


def _fused_taps(
    g: GraphBuilder, cfg: FlowLMConfig, layer: int, q: str, keys: str, total: str
) -> list[str]:
    """For each of layer ``layer``'s word-timing heads, the raw scores (before the scale)
    of each row's last query ``q [B, T, heads * Dh]`` over the keys of its KV head in the
    cache after the call (``keys [B, Hkv, C, Dh]``), in position order: ``[B, 1, total]``
    (past a row's own length: not defined). Computed beside the fused op, from its one
    head: the op's own ``qk_output`` writes every head's scores and slowed every call
    (2 of 6 full-size layers: 1.1 CPU-ms a step at 8 rows, 0.15 at one, asked or not)."""
    t = cfg.transformer
    group, dim = t.num_heads // t.kv_heads, t.head_dim
    taps = []
    for layer_of, head in cfg.timestamp_heads or ():
        if layer_of != layer:
            continue
        last = g.op("Gather", [q, g.const([-1], np.int64)], axis=1)  # [B, 1, heads * Dh]
        q_head = g.reshape(g.slice(last, head * dim, (head + 1) * dim, axis=2), [0, 1, dim, 1])
        k_head = g.op("Gather", [keys, g.const([head // group], np.int64)], axis=1)
        scores = g.reshape(g.op("MatMul", [k_head, q_head]), [0, 1, -1])  # [B, 1, C]
        taps.append(g.op("Slice", [scores, g.const([0], np.int64), total, g.const([2], np.int64)]))
    return taps


@dataclass(frozen=True)
class _BatchAttention:
    """What every layer of the batched step shares: RoPE tables, the mask, shapes."""

    cos: str
    sin: str
    mask: str  # [B, 1, 1, T, T + C]: new keys first, then the cache
    split_sizes: str
    q_shape: str
    kv_shape: str
    scale: str
    minus_inf: str


def _batch_attention_setup(
    g: GraphBuilder, t: FlowTransformerConfig, x: str, positions: str, key_cache: str
) -> _BatchAttention:
    """Each row's positions, RoPE tables and mask: its own cache below ``positions[b]``,
    its new positions causally."""
    kv_heads, head_dim = t.kv_heads, t.head_dim
    rows, n_new = g.shape_dim(x, 0), g.shape_dim(x, 1)
    capacity = g.shape_dim(key_cache, 3)
    new_index = g.op("Range", [g.const(0, np.int64), g.squeeze(n_new, [0]), g.const(1, np.int64)])
    at = g.op("Add", [g.unsqueeze(positions, [1]), g.unsqueeze(new_index, [0])])  # [B, T]
    cos, sin = rope_tables(g, g.reshape(at, [-1]), head_dim, t.max_period)  # [B * T, 1, Dh]
    cache_index = g.op(
        "Range", [g.const(0, np.int64), g.squeeze(capacity, [0]), g.const(1, np.int64)]
    )
    cache_visible = g.op("Less", [g.unsqueeze(cache_index, [0]), g.unsqueeze(positions, [1])])
    causal = g.op("LessOrEqual", [g.unsqueeze(new_index, [0]), g.unsqueeze(new_index, [1])])
    # The new keys come first: a row's scores then sit at the same places whatever the
    # capacity its batch shares (the masked tail only adds exact zeros), so its sums are
    # made in the same order alone and in any batch: the same bits.
    mask = g.concat(
        [
            g.op("Expand", [g.unsqueeze(causal, [0]), g.concat([rows, n_new, n_new], axis=0)]),
            g.op(
                "Expand",
                [g.unsqueeze(cache_visible, [1]), g.concat([rows, n_new, capacity], axis=0)],
            ),
        ],
        axis=2,
    )
    group = t.num_heads // kv_heads
    return _BatchAttention(
        cos=cos,
        sin=sin,
        mask=g.unsqueeze(mask, [1, 2]),
        split_sizes=g.concat([n_new, capacity], axis=0),
        q_shape=g.concat([rows, n_new, g.const([kv_heads, group, head_dim], np.int64)], axis=0),
        kv_shape=g.concat([rows, n_new, g.const([kv_heads, head_dim], np.int64)], axis=0),
        scale=g.const(1.0 / np.sqrt(head_dim)),
        minus_inf=g.const(-np.inf),
    )


def _batch_layer(
    g: GraphBuilder,
    w: Weights,
    t: FlowTransformerConfig,
    i: int,
    x: str,
    key_cache: str,
    value_cache: str,
    s: _BatchAttention,
    words: tuple[FlowLMConfig, list[str]] | None = None,
) -> str:
    """Layer ``i`` of the batched step; declares its ``new_keys_i``/``new_values_i``
    (``words``: the config and the list its word-timing heads' scores join)."""
    kv_heads, head_dim = t.kv_heads, t.head_dim
    q, k, v = attention_inputs(g, w, t, i, x, s.cos, s.sin)  # [B * T, heads or Hkv, Dh]
    q = g.transpose(g.op("Reshape", [q, s.q_shape]), [0, 2, 3, 1, 4])  # [B, Hkv, G, T, Dh]
    new_keys = g.transpose(g.op("Reshape", [k, s.kv_shape]), [0, 2, 3, 1])
    new_values = g.transpose(g.op("Reshape", [v, s.kv_shape]), [0, 2, 1, 3])
    g.output(new_keys, f"new_keys_{i}", np.float32, ["batch", kv_heads, head_dim, "n_new"])
    g.output(new_values, f"new_values_{i}", np.float32, ["batch", kv_heads, "n_new", head_dim])
    scores = g.concat(
        [
            g.op("MatMul", [q, g.unsqueeze(new_keys, [2])]),
            g.op("MatMul", [q, g.unsqueeze(key_cache, [2])]),
        ],
        axis=4,
    )  # [B, Hkv, G, T, T + C]
    if words is not None:
        words[1].extend(head_taps(g, scores, i, words[0]))
    scores = g.op("Where", [s.mask, g.op("Mul", [scores, s.scale]), s.minus_inf])
    probs = g.op("Softmax", [scores], axis=-1)
    p_new, p_cache = g.op_multi("Split", [probs, s.split_sizes], 2, axis=4)
    attn = g.op(
        "Add",
        [
            g.op("MatMul", [p_cache, g.unsqueeze(value_cache, [2])]),
            g.op("MatMul", [p_new, g.unsqueeze(new_values, [2])]),
        ],
    )  # [B, Hkv, G, T, Dh]
    attn = g.reshape(g.transpose(attn, [0, 3, 1, 2, 4]), [0, 0, t.num_heads * head_dim])
    return attention_output_and_ffn(g, w, i, x, attn)


def _variance_norm(g: GraphBuilder, x: str, alpha: np.ndarray, name: str) -> str:
    """The time embedders' "RMSNorm": divides by sqrt(eps + unbiased variance)."""
    n = alpha.shape[0]
    centred = g.op("Sub", [x, g.op("ReduceMean", [x, g.const([-1], np.int64)], keepdims=1)])
    sq_sum = g.op(
        "ReduceSum", [g.op("Mul", [centred, centred]), g.const([-1], np.int64)], keepdims=1
    )
    var = g.op("Add", [g.op("Div", [sq_sum, g.const(n - 1.0)]), g.const(1e-5)])
    inv_std = g.op("Reciprocal", [g.op("Sqrt", [var])])
    gain = g.op("Mul", [g.weight(f"{name}.alpha", alpha), inv_std])
    return g.op("Mul", [x, gain])


def _time_embedding(g: GraphBuilder, w: Weights, t: str, i: int) -> str:
    p = f"flow_lm.flow_net.time_embed.{i}"
    args = g.op("Mul", [t, g.weight(f"time_embed.{i}.freqs", w[f"{p}.freqs"])])
    e = g.concat([g.op("Cos", [args]), g.op("Sin", [args])], axis=-1)
    e = g.silu(g.linear(e, w[f"{p}.mlp.0.weight"], w[f"{p}.mlp.0.bias"], f"time_embed.{i}.0"))
    e = g.linear(e, w[f"{p}.mlp.2.weight"], w[f"{p}.mlp.2.bias"], f"time_embed.{i}.2")
    return _variance_norm(g, e, w[f"{p}.mlp.3.alpha"], f"time_embed.{i}.3")


def _modulate(g: GraphBuilder, x: str, shift: str, scale: str) -> str:
    return g.op("Add", [g.op("Mul", [x, g.op("Add", [scale, g.const(1.0)])]), shift])


def build_flow_head(w: Weights, cfg: FlowLMConfig, batch: bool = False) -> onnx.ModelProto:
    """The flow network v(z, s, t, x) (SimpleMLPAdaLN); the host integrates it.

    ``batch``: rows of independent frames (``flow_head_batch``, the scheduler's);
    every op works row by row, so a row's velocity does not depend on the others.
    """
    f = cfg.flow
    rows: int | str = "batch" if batch else 1
    g = GraphBuilder("flow_head_batch" if batch else "flow_head")
    cond = g.input("z", np.float32, [rows, cfg.cond_dim])
    times = [g.input(name, np.float32, [rows, 1]) for name in ("s", "t")[2 - f.num_time_conds :]]
    x = g.input("x", np.float32, [rows, cfg.latent_dim])
    velocity = flow_velocity(g, w, cfg, cond, times, x)
    g.output(velocity, "velocity", np.float32, [rows, cfg.latent_dim])
    return g.model()


def flow_velocity(
    g: GraphBuilder, w: Weights, cfg: FlowLMConfig, cond: str, times: list[str], x: str
) -> str:
    """v(z, times, x) on ``cond [1, cond_dim]``, ``x [1, latent]``, times ``[1, 1]`` each.

    A function, not only a graph, so a graph can unroll a sampler over it
    (FluidAudio's fused decoder); such a graph's builder must share weights
    registered under one name.
    """
    f = cfg.flow
    n = f.dim
    p = "flow_lm.flow_net"

    y = g.linear(cond, w[f"{p}.cond_embed.weight"], w[f"{p}.cond_embed.bias"], "cond_embed")
    if times:
        total = _time_embedding(g, w, times[0], 0)
        for i, t in enumerate(times[1:], start=1):
            total = g.op("Add", [total, _time_embedding(g, w, t, i)])
        y = g.op("Add", [y, g.op("Div", [total, g.const(float(len(times)))])])
    h = g.linear(x, w[f"{p}.input_proj.weight"], w[f"{p}.input_proj.bias"], "input_proj")
    y_act = g.silu(y)
    for i in range(f.depth):
        b = f"{p}.res_blocks.{i}"
        mod = g.linear(
            y_act,
            w[f"{b}.adaLN_modulation.1.weight"],
            w[f"{b}.adaLN_modulation.1.bias"],
            f"res{i}.ada",
        )
        shift, scale, gate = g.split(mod, [n, n, n], axis=-1)
        u = g.layer_norm(h, w[f"{b}.in_ln.weight"], w[f"{b}.in_ln.bias"], 1e-6, f"res{i}.ln")
        u = _modulate(g, u, shift, scale)
        u = g.silu(g.linear(u, w[f"{b}.mlp.0.weight"], w[f"{b}.mlp.0.bias"], f"res{i}.mlp0"))
        u = g.linear(u, w[f"{b}.mlp.2.weight"], w[f"{b}.mlp.2.bias"], f"res{i}.mlp2")
        h = g.op("Add", [h, g.op("Mul", [gate, u])])
    fl = f"{p}.final_layer"
    mod = g.linear(
        y_act, w[f"{fl}.adaLN_modulation.1.weight"], w[f"{fl}.adaLN_modulation.1.bias"], "final.ada"
    )
    shift, scale = g.split(mod, [n, n], axis=-1)
    h = _modulate(g, g.layer_norm(h, None, None, 1e-6, "final.ln", dim=n), shift, scale)
    return g.linear(h, w[f"{fl}.linear.weight"], w[f"{fl}.linear.bias"], "final.linear")
