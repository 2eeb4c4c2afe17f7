"""ONNX twins of FluidAudio's Mimi models: ``mimi_decoder`` and the clone encoders.

Decoder contract (FluidAudio v2 schema): input ``latent [1, 32]`` (the
FlowLM's normalised latent; the graph denormalises with ``emb_std``/
``emb_mean``) plus 24 state tensors, output audio ``[1, 1, 1920]`` plus the
next states. Pass-through states (``*_first`` flags, zero-length contexts)
come back under their input's name; the others under auto-style ``var_NNN``
names numbered in canonical order and emitted in a scrambled order, so the
runtime has to find them by FluidAudio's discovery rules.

The convolutions are our pack's (``mimi_graphs``), renamed. The transformer
differs: FluidAudio keeps per layer a ring ``attn{j}_cache [2, 1, 256, H,
Dh]`` and a float ``attn{j}_offset`` (positions seen). Here slot ``j`` of
the ring holds the latest position ``p < offset`` with ``p = j mod 256``;
the 16 new keys are attended together with the ring (masked by pocket-tts's
rule: ``0 <= query - key < context``) and then written at ``position mod
256``, so with 256 >= context every query sees exactly pocket-tts's window.
"""

from __future__ import annotations

import re

import numpy as np
import onnx
from onnx import TensorProto, helper

from pocketcli.config import MimiConfig, MimiTransformerConfig
from pocketcli.packs.mimi_encoder_graph import build_mimi_encoder
from pocketcli.packs.mimi_graphs import _seanet_decoder, _streaming_conv_transpose
from pocketcli.packs.mimi_layers import Weights, mimi_transformer
from pocketcli.packs.onnx_graph import GraphBuilder
from pocketcli.packs.rope import rope_tables
from pocketcli.runtimes.coreml import contract as c

_INT = np.int64
# Our decoder's internal conv names, in the order the SEANet decoder creates them.
_INTERNAL = re.compile(r"^(upsample|dec\.conv_in|dec\.up\d+|dec\.res\d+\.conv[12]|dec\.conv_out)$")


class _FluidStates:
    """Stands in for mimi_graphs' state holder, naming states as FluidAudio does."""

    def __init__(self, g: GraphBuilder) -> None:
        self.g = g
        # One stream, time-major: the unbatched layout of mimi_graphs' holder.
        self.batched = False
        self.t = 0
        self.rows: list[int] = []
        # FluidAudio's decoder carries the upsamplers' overlap (``convtr*_partial``), not
        # their last input row: mimi_graphs' form for packs built before 2026-12-03.
        self.overlap = True
        self.inputs: dict[str, tuple[int, ...]] = {}
        self.updates: dict[str, str] = {}  # FluidAudio name -> new value tensor
        self._ratio = -1
        self._last = ("", "", 0)  # (internal, FluidAudio, rank) of the last state

    def _fluid_name(self, internal: str) -> str:
        if not _INTERNAL.match(internal):
            raise ValueError(f"no FluidAudio name for decoder state {internal!r}")
        if internal == "upsample":
            return "upsample_partial"
        if internal == "dec.conv_in":
            return "conv0_prev"
        if internal == "dec.conv_out":
            return "conv_final_prev"
        if internal.startswith("dec.up"):
            self._ratio += 1
            return f"convtr{self._ratio}_partial"
        conv = 0 if internal.endswith("conv1") else 1
        return f"res{self._ratio}_conv{conv}_prev"

    def state(self, name: str, shape: tuple[int, ...], dtype: type = np.float32) -> str:
        if name.startswith("attn"):
            self.inputs[name] = tuple(shape)
            return self.g.input(name, np.float32, list(shape))
        # Our conv states are time-major: [context, C] or [1, stride, C]; FluidAudio's
        # are channel-major [1, C, n]. Transpose at the boundary, both ways.
        fluid = self._fluid_name(name)
        n, channels = (shape[0], shape[1]) if len(shape) == 2 else (shape[1], shape[2])
        self.inputs[fluid] = (1, channels, n)
        self._last = (name, fluid, len(shape))
        value = self.g.transpose(self.g.input(fluid, np.float32, [1, channels, n]), [0, 2, 1])
        return self.g.squeeze(value, [0]) if len(shape) == 2 else value

    def update(self, name: str, value: str) -> None:
        if name.startswith("attn"):
            self.updates[name] = value
            return
        internal, fluid, rank = self._last
        if internal != name:
            raise ValueError(f"state {name!r} updated out of order")
        if rank == 2:
            value = self.g.unsqueeze(value, [0])
        self.updates[fluid] = self.g.transpose(value, [0, 2, 1])


def _ring_transformer(
    st: _FluidStates, x: str, w: Weights, prefix: str, cfg: MimiTransformerConfig, steps: int
) -> str:
    """The decoder transformer over ``x [1, steps, d]`` with per-layer 256-slot rings."""
    g = st.g
    heads, ctx, slots = cfg.num_heads, cfg.context, c.MIMI_ATTENTION_SLOTS
    head_dim = cfg.d_model // heads
    if ctx > slots:
        raise ValueError(f"context {ctx} does not fit FluidAudio's {slots}-slot ring")
    new_index = g.const(np.arange(steps), _INT)
    slot_index = g.const(np.arange(slots), _INT)
    ring = (2, 1, slots, heads, head_dim)
    offsets = [
        g.op("Cast", [st.state(f"attn{j}_offset", (1,))], to=TensorProto.INT64)
        for j in range(cfg.num_layers)
    ]
    cos, sin = rope_tables(g, g.op("Add", [new_index, offsets[0]]), head_dim, cfg.max_period)
    scale = g.const(1.0 / np.sqrt(head_dim))
    layer = iter(range(cfg.num_layers))

    def attend(_ln: str, q: str, k: str, v: str) -> str:
        j = next(layer)
        offset = offsets[j]
        cache = st.state(f"attn{j}_cache", ring)
        q_pos = g.op("Add", [new_index, offset])  # [T]
        before = g.op("Sub", [offset, g.const([1], _INT)])
        slot_pos = g.op(
            "Sub",
            [before, g.op("Mod", [g.op("Sub", [before, slot_index]), g.const([slots], _INT)])],
        )  # [R]
        k_pos = g.concat([slot_pos, q_pos], axis=0)
        delta = g.op("Sub", [g.unsqueeze(q_pos, [1]), g.unsqueeze(k_pos, [0])])
        mask = g.op(
            "And",
            [
                g.op(
                    "And",
                    [
                        g.op("GreaterOrEqual", [g.unsqueeze(k_pos, [0]), g.const(0, _INT)]),
                        g.op("GreaterOrEqual", [delta, g.const(0, _INT)]),
                    ],
                ),
                g.op("Less", [delta, g.const(ctx, _INT)]),
            ],
        )
        ring_k, ring_v = (g.squeeze(t, [0, 1]) for t in g.split(cache, [1, 1], axis=0))
        keys = g.concat([g.transpose(ring_k, [1, 0, 2]), k], axis=1)  # [H, R+T, Dh]
        values = g.concat([g.transpose(ring_v, [1, 0, 2]), v], axis=1)
        scores = g.op("Mul", [g.op("MatMul", [q, g.transpose(keys, [0, 2, 1])]), scale])
        scores = g.op("Where", [mask, scores, g.const(-np.inf)])
        out = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), values])  # [H, T, Dh]
        index = g.unsqueeze(g.op("Mod", [q_pos, g.const([slots], _INT)]), [1])
        new_k = g.op("ScatterND", [ring_k, index, g.transpose(k, [1, 0, 2])])
        new_v = g.op("ScatterND", [ring_v, index, g.transpose(v, [1, 0, 2])])
        st.update(
            f"attn{j}_cache",
            g.unsqueeze(g.concat([g.unsqueeze(new_k, [0]), g.unsqueeze(new_v, [0])], axis=0), [1]),
        )
        return out

    y = mimi_transformer(g, x, w, prefix, cfg, "dec_tr", cos, sin, attend)
    for j in range(cfg.num_layers):
        offset_in = f"attn{j}_offset"
        st.update(offset_in, g.op("Add", [offset_in, g.const([float(steps)])]))
    return y


def build_mimi_decoder_twin(w: Weights, cfg: MimiConfig) -> onnx.ModelProto:
    """``mimi_decoder``: one latent -> 1920 samples, threading FluidAudio's 24 states."""
    canonical = c.mimi_states(cfg)
    g = GraphBuilder("mimi_decoder")
    st = _FluidStates(g)
    latent = g.input(c.MIMI_LATENT_INPUT, np.float32, [1, cfg.quantizer_dimension])
    x = g.op(
        "Add",
        [
            g.op("Mul", [g.unsqueeze(latent, [1]), g.weight("emb_std", w["flow_lm.emb_std"])]),
            g.weight("emb_mean", w["flow_lm.emb_mean"]),
        ],
    )  # [1, 1, 32]
    proj = w["mimi.quantizer.output_proj.weight"][:, :, 0]
    x = g.reshape(g.linear(x, proj, None, "quantizer.output_proj"), [-1, proj.shape[0]])
    steps = 1
    if cfg.upsample_stride > 1:
        x = _streaming_conv_transpose(
            st,
            x,
            w,
            "mimi.upsample.convtr.convtr",
            "upsample",
            stride=cfg.upsample_stride,
            groups=w["mimi.upsample.convtr.convtr.weight"].shape[0],
        )
        steps = cfg.upsample_stride
    x = g.squeeze(
        _ring_transformer(
            st, g.unsqueeze(x, [0]), w, "mimi.decoder_transformer", cfg.decoder_transformer, steps
        ),
        [0],
    )
    audio = g.reshape(_seanet_decoder(st, x, w, cfg.decoder_seanet), [1, 1, cfg.samples_per_frame])

    outputs: list[tuple[str, str, tuple[int, ...]]] = []
    number = 400
    for state in canonical:
        if state.name in st.inputs:
            if st.inputs[state.name] != state.shape:
                raise ValueError(
                    f"state {state.name} has shape {st.inputs[state.name]},"
                    f" the contract says {state.shape}"
                )
            outputs.append((st.updates[state.name], f"var_{number}", state.shape))
            number += 23
        else:  # pass-through: same name in and out
            g.input(state.name, np.float32, list(state.shape))
            g.outputs.append(
                helper.make_tensor_value_info(state.name, TensorProto.FLOAT, list(state.shape))
            )
    outputs.append((audio, f"var_{number + 5}", (1, 1, cfg.samples_per_frame)))
    extra = sorted(set(st.inputs) - {s.name for s in canonical})
    if extra:
        raise ValueError(f"decoder states outside FluidAudio's schema: {extra}")
    for tensor, name, shape in outputs[1::2][::-1] + outputs[0::2]:
        g.output(tensor, name, np.float32, list(shape))
    return g.model()


def build_voice_encoder_twin(
    w: Weights, cfg: MimiConfig, samples: int = c.ENCODER_SAMPLES
) -> onnx.ModelProto:
    """``mimi_encoderv2``/``v3``: ``audio [1, 1, samples]`` -> ``conditioning [1, F, d]``.

    Our encoder graph (``mimi_encoder_graph``) with FluidAudio's fixed input
    and batched output around it.
    """
    model = build_mimi_encoder(w, cfg)
    graph = model.graph
    frames = -(-samples // cfg.samples_per_frame)
    d = w["flow_lm.speaker_proj_weight"].shape[0]
    (audio,) = [i for i in graph.input if i.name == "audio"]
    (cond,) = [o for o in graph.output if o.name == "conditioning"]
    for node in graph.node:
        node.input[:] = ["audio__2d" if n == "audio" else n for n in node.input]
        node.output[:] = ["conditioning__2d" if n == "conditioning" else n for n in node.output]
    shape_2d = helper.make_tensor("audio__shape", TensorProto.INT64, [2], [1, samples])
    axes = helper.make_tensor("conditioning__axes", TensorProto.INT64, [1], [0])
    graph.initializer.extend([shape_2d, axes])
    graph.node.insert(0, helper.make_node("Reshape", ["audio", "audio__shape"], ["audio__2d"]))
    graph.node.append(
        helper.make_node("Unsqueeze", ["conditioning__2d", "conditioning__axes"], ["conditioning"])
    )
    audio.CopyFrom(helper.make_tensor_value_info("audio", TensorProto.FLOAT, [1, 1, samples]))
    cond.CopyFrom(helper.make_tensor_value_info("conditioning", TensorProto.FLOAT, [1, frames, d]))
    _scalar_range_limits(graph)
    return model


def _scalar_range_limits(graph: onnx.GraphProto) -> None:
    """Feeds ``Range`` true scalars where it gets one-element constants.

    GraphBuilder constants are at least 1-D; ONNX Runtime accepts a ``[1]``
    Range operand while shapes are dynamic, but its shape inference rejects
    it once the input shape is fixed, as the twin's is.
    """
    one_element = {t.name for t in graph.initializer if list(t.dims) == [1]}
    axes = "range__scalar_axes"
    graph.initializer.append(helper.make_tensor(axes, TensorProto.INT64, [1], [0]))
    squeezed: set[str] = set()
    for node in list(graph.node):
        if node.op_type != "Range":
            continue
        for k, name in enumerate(node.input):
            if name in one_element:
                if name not in squeezed:
                    graph.node.insert(
                        0, helper.make_node("Squeeze", [name, axes], [f"{name}__scalar"])
                    )
                    squeezed.add(name)
                node.input[k] = f"{name}__scalar"
