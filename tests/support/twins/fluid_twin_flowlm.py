"""ONNX twins of FluidAudio's FlowLM models: cond_prefill, flowlm_step, flow_decoder_fused.

A twin has its Core ML model's input and output names, shapes and dtypes
(fp32) and computes what FluidAudio's docs and Swift host say the model
computes, written op by op with the same layers as our own packs
(``flowlm_graphs``). The CoreML runtime's host code runs on twins through
ONNX Runtime, so it is tested on Linux against the pocket-tts oracle.

Cache semantics (both placements; ``gpu`` keeps K and V as one rank-5
``cache{i} [2, 1, S, kv_heads, head_dim]``, ``ane`` as rank-4 ``k_cache{i}``
and ``v_cache{i} [1, S, kv_heads, head_dim]``; S = 512 slots):

* row t of a call is the position ``position + t`` and is written at slot
  ``(position + t) mod S``; rows at or past ``valid_len`` (prefill padding)
  go to the dump slot ``S - 1`` instead and are never attended to;
* then every row attends over all S slots, masked to slots
  ``<= its position`` and ``< position + valid_len`` (a step has valid_len 1);
  NaNs in the caches are zeroed first (and stay zeroed in the outputs);
* RoPE uses the absolute positions; outputs are the new caches and
  ``position + valid_len``.

Rank-5 outputs carry auto-style names like Core ML's
(``new_cache_<2i+1>_internal_tensor_assign_2``, the last layer unnumbered,
positions ``var_NNN``) in a scrambled order, so the runtime must find them
by FluidAudio's discovery rules, not by position.
"""

from __future__ import annotations

import numpy as np
import onnx

from pocketcli.config import FlowLMConfig
from pocketcli.packs.flowlm_graphs import (
    attention_inputs,
    attention_output_and_ffn,
    flow_velocity,
    output_heads,
)
from pocketcli.packs.onnx_graph import GraphBuilder
from pocketcli.packs.rope import rope_tables
from pocketcli.runtimes.coreml import contract as c

Weights = dict[str, np.ndarray]
_INT = np.int64


class SharedWeightsBuilder(GraphBuilder):
    """A GraphBuilder where registering a weight name twice reuses the first tensor.

    Lets a graph call a network function several times (the fused decoder's
    8 unrolled flow steps) with one copy of its weights.
    """

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self._names: set[str] = set()

    def weight(self, name: str, array: np.ndarray) -> str:
        if name in self._names:
            return name
        self._names.add(name)
        return super().weight(name, array)


def cache_output_name(i: int, layers: int) -> str:
    """Core ML's auto name for layer i's cache (the last layer's has no number)."""
    return (
        "new_cache_internal_tensor_assign_2"
        if i == layers - 1
        else f"new_cache_{2 * i + 1}_internal_tensor_assign_2"
    )


def _scramble(items: list) -> list:
    """A fixed non-identity order (odd indices reversed, then even ones)."""
    return items[1::2][::-1] + items[0::2]


class _Layers:
    """Builds the per-layer cache write + masked attention shared by prefill and step."""

    def __init__(
        self, g: GraphBuilder, w: Weights, cfg: FlowLMConfig, rows: int, slots: int, split: bool
    ) -> None:
        self.g, self.w, self.cfg = g, w, cfg
        self.t = cfg.transformer
        self.rows, self.slots, self.split = rows, slots, split
        self.row_index = g.const(np.arange(rows), _INT)
        self.slot_index = g.const(np.arange(slots), _INT)
        self.caches: list[tuple[str, ...]] = []  # graph inputs per layer
        self.positions: list[str] = []

    def inputs(self) -> None:
        t, g = self.t, self.g
        for i in range(t.num_layers):
            if self.split:
                shape = [1, self.slots, t.kv_heads, t.head_dim]
                self.caches.append(
                    (
                        g.input(f"k_cache{i}", np.float32, shape),
                        g.input(f"v_cache{i}", np.float32, shape),
                    )
                )
            else:
                shape = [2, 1, self.slots, t.kv_heads, t.head_dim]
                self.caches.append((g.input(f"cache{i}", np.float32, shape),))
            self.positions.append(g.input(f"position{i}", np.float32, [1]))

    def _kv(self, i: int) -> tuple[str, str]:
        """Layer i's K and V as ``[S, kv_heads, head_dim]``."""
        g = self.g
        if self.split:
            k, v = self.caches[i]
            return g.squeeze(k, [0]), g.squeeze(v, [0])
        pair = g.squeeze(self.caches[i][0], [1])  # [2, S, Hkv, Dh]
        k, v = g.split(pair, [1, 1], axis=0)
        return g.squeeze(k, [0]), g.squeeze(v, [0])

    def layer(self, i: int, x: str, n_valid: str, last: bool) -> tuple[str, tuple[str, ...], str]:
        """Writes layer i's rows, attends, returns (x, new cache tensors, new position)."""
        g, t = self.g, self.t
        position = g.op("Cast", [self.positions[i]], to=onnx.TensorProto.INT64)  # [1]
        row_pos = g.op("Add", [self.row_index, position])  # [T]
        cos, sin = rope_tables(g, row_pos, t.head_dim, t.max_period)
        q, k, v = attention_inputs(g, self.w, t, i, x, cos, sin)
        valid = g.op("Less", [self.row_index, n_valid])
        slot = g.op(
            "Where",
            [
                valid,
                g.op("Mod", [row_pos, g.const([self.slots], _INT)]),
                g.const([self.slots - 1], _INT),
            ],
        )
        index = g.unsqueeze(slot, [1])  # [T, 1]
        keys, values = self._kv(i)
        zero = g.const(0.0)
        keys = g.op("ScatterND", [keys, index, k])
        values = g.op("ScatterND", [values, index, v])
        keys = g.op("Where", [g.op("IsNaN", [keys]), zero, keys])
        values = g.op("Where", [g.op("IsNaN", [values]), zero, values])
        if self.split:
            new_cache: tuple[str, ...] = (g.unsqueeze(keys, [0]), g.unsqueeze(values, [0]))
        else:
            new_cache = (
                g.unsqueeze(
                    g.concat([g.unsqueeze(keys, [0]), g.unsqueeze(values, [0])], axis=0), [1]
                ),
            )
        new_position = g.op(
            "Add", [self.positions[i], g.op("Cast", [n_valid], to=onnx.TensorProto.FLOAT)]
        )
        if last:
            return x, new_cache, new_position
        end = g.op("Add", [position, n_valid])
        visible = g.op(
            "And",
            [
                g.op("LessOrEqual", [g.unsqueeze(self.slot_index, [0]), g.unsqueeze(row_pos, [1])]),
                g.unsqueeze(g.op("Less", [self.slot_index, end]), [0]),
            ],
        )  # [T, S]
        group = t.num_heads // t.kv_heads
        q = g.transpose(g.reshape(q, [-1, t.kv_heads, group, t.head_dim]), [1, 2, 0, 3])
        scores = g.op("MatMul", [q, g.unsqueeze(g.transpose(keys, [1, 2, 0]), [1])])
        scores = g.op(
            "Where",
            [visible, g.op("Mul", [scores, g.const(1.0 / np.sqrt(t.head_dim))]), g.const(-np.inf)],
        )
        attn = g.op(
            "MatMul",
            [g.op("Softmax", [scores], axis=-1), g.unsqueeze(g.transpose(values, [1, 0, 2]), [1])],
        )
        attn = g.reshape(g.transpose(attn, [2, 0, 1, 3]), [1, -1, t.num_heads * t.head_dim])
        return attention_output_and_ffn(g, self.w, i, x, attn), new_cache, new_position


def _emit_layer_outputs(
    g: GraphBuilder,
    layers: _Layers,
    caches: list[tuple[str, ...]],
    positions: list[str],
    position_base: int,
) -> list[tuple[str, str, list]]:
    """(tensor, output name, shape) per cache and position, named like Core ML's outputs."""
    t = layers.t
    n = t.num_layers
    out: list[tuple[str, str, list]] = []
    for i in range(n):
        if layers.split:
            shape = [1, layers.slots, t.kv_heads, t.head_dim]
            out += [
                (caches[i][0], f"new_k_cache{i}", shape),
                (caches[i][1], f"new_v_cache{i}", shape),
                (positions[i], f"new_position{i}", [1]),
            ]
        else:
            out += [
                (
                    caches[i][0],
                    cache_output_name(i, n),
                    [2, 1, layers.slots, t.kv_heads, t.head_dim],
                ),
                (positions[i], f"var_{position_base + 419 * i}", [1]),
            ]
    return out


def build_cond_prefill_twin(
    w: Weights,
    cfg: FlowLMConfig,
    split: bool = False,
    slots: int = c.KV_SLOTS,
    rows: int = c.PREFILL_ROWS,
) -> onnx.ModelProto:
    """``cond_prefill`` (gpu) or ``cond_prefill_ane`` (``split``): rows into the caches."""
    g = GraphBuilder("cond_prefill_ane" if split else "cond_prefill")
    d = cfg.transformer.d_model
    x = g.input("conditioning", np.float32, [1, rows, d])
    valid_len = g.input("valid_len", np.float32, [1])
    layers = _Layers(g, w, cfg, rows, slots, split)
    layers.inputs()
    n_valid = g.op("Cast", [valid_len], to=onnx.TensorProto.INT64)
    caches, positions = [], []
    for i in range(cfg.transformer.num_layers):
        x, cache, position = layers.layer(i, x, n_valid, last=i == cfg.transformer.num_layers - 1)
        caches.append(cache)
        positions.append(position)
    outputs = _emit_layer_outputs(g, layers, caches, positions, position_base=445)
    for tensor, name, shape in outputs if split else _scramble(outputs):
        g.output(tensor, name, np.float32, shape)
    return g.model()


def build_flowlm_step_twin(
    w: Weights, cfg: FlowLMConfig, split: bool = False, slots: int = c.KV_SLOTS
) -> onnx.ModelProto:
    """``flowlm_step`` (gpu; NaN sequence = BOS from the ``bos_emb`` input) or
    ``flowlm_step_ane`` (``split``; the host passes the BOS latent itself)."""
    g = GraphBuilder("flowlm_step_ane" if split else "flowlm_step")
    sequence = g.input("sequence", np.float32, [1, 1, cfg.latent_dim])
    if not split:
        bos = g.input("bos_emb", np.float32, [cfg.latent_dim])
        sequence = g.op("Where", [g.op("IsNaN", [sequence]), bos, sequence])
    layers = _Layers(g, w, cfg, 1, slots, split)
    layers.inputs()
    x = g.linear(sequence, w["flow_lm.input_linear.weight"], None, "input_linear")
    one = g.const([1], _INT)
    caches, positions = [], []
    for i in range(cfg.transformer.num_layers):
        x, cache, position = layers.layer(i, x, one, last=False)
        caches.append(cache)
        positions.append(position)
    hidden, eos = output_heads(g, w, cfg, x)  # [1, 1, cond], [1, 1, 1]
    outputs = _emit_layer_outputs(g, layers, caches, positions, position_base=458)
    if split:
        outputs += [(hidden, "transformer_out", [1, 1, cfg.cond_dim]), (eos, "is_eos", [1, 1, 1])]
    else:
        n = len(outputs)
        outputs = _scramble(
            outputs
            + [
                (hidden, f"var_{2570 + 10 * n}", [1, 1, cfg.cond_dim]),
                (eos, f"var_{2582 + 10 * n}", [1, 1, 1]),
            ]
        )
    for tensor, name, shape in outputs:
        g.output(tensor, name, np.float32, shape)
    return g.model()


def build_flow_decoder_fused_twin(
    w: Weights, cfg: FlowLMConfig, steps: int = c.FUSED_DECODER_STEPS
) -> onnx.ModelProto:
    """``flow_decoder_fused``: ``steps`` unrolled LSD steps from the host's noise.

    ``x <- x + v(z, s=i/steps, t=(i+1)/steps, x) / steps`` for i = 0..steps-1,
    which is pocket-tts's ``lsd_decode(..., num_steps=steps)``.
    """
    if cfg.flow.type != "lsd":
        raise ValueError(
            f"FluidAudio's fused decoder integrates an LSD head, not {cfg.flow.type!r}"
        )
    g = SharedWeightsBuilder("flow_decoder_fused")
    cond = g.input("transformer_out", np.float32, [1, cfg.cond_dim])
    x = g.input("latent_init", np.float32, [1, cfg.latent_dim])
    for i in range(steps):
        times = [g.const([[i / steps]]), g.const([[(i + 1) / steps]])]
        v = flow_velocity(g, w, cfg, cond, times, x)
        x = g.op("Add", [x, g.op("Div", [v, g.const(float(steps))])])
    g.output(x, c.FUSED_DECODER_OUTPUT, np.float32, [1, cfg.latent_dim])
    return g.model()
