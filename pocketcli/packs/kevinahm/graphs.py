"""The five graphs of a KevinAHM v2 bundle, from our own graph code.

``flow_lm_main`` and ``flow_lm_flow`` are written here with the layer helpers
of ``flowlm_graphs``: the backbone takes its whole KV cache as a state
(``[2, 1, 1000, kv_heads, head_dim]`` per layer, written at ``step``) and
returns it updated, as KevinAHM's graph does. The Mimi decoder and encoder
and the text table are our own graphs with adapters around them: the
decoder's states are mapped between that layout's manifest (channel-major
convolution contexts, head-major attention ring buffers of 1000 positions) and
ours (time-major contexts, a window of ``context`` keys), so the audio is the
audio of our pack.
"""

from __future__ import annotations

import itertools
import re

import numpy as np
import onnx
from onnx import helper

from pocketcli.config import FlowLMConfig, MimiConfig, ModelConfig
from pocketcli.packs.flowlm_graphs import (
    attention_inputs,
    attention_output_and_ffn,
    build_text_embedding,
    flow_velocity,
    output_heads,
)
from pocketcli.packs.kevinahm.metadata import (
    CACHE_POSITIONS,
    StateEntry,
    flow_lm_manifest,
    mimi_manifest,
)
from pocketcli.packs.mimi_encoder_graph import build_mimi_encoder
from pocketcli.packs.mimi_graphs import build_mimi_decoder
from pocketcli.packs.onnx_graph import GraphBuilder
from pocketcli.packs.rope import rope_tables

Weights = dict[str, np.ndarray]
_END = np.iinfo(np.int64).max
_NP = {"float32": np.float32, "int64": np.int64, "bool": np.bool_}


def _state_io(g: GraphBuilder, entry: StateEntry) -> str:
    return g.input(entry.input_name, _NP[entry.dtype], list(entry.shape))


def _state_out(g: GraphBuilder, entry: StateEntry, value: str) -> None:
    g.output(value, entry.output_name, _NP[entry.dtype], list(entry.shape))


def build_text_conditioner(w: Weights, cfg: FlowLMConfig) -> onnx.ModelProto:
    """``token_ids [1, seq_len]`` -> ``embeddings [1, seq_len, d_model]`` (our graph)."""
    model = build_text_embedding(w, cfg)
    for value in [*model.graph.input, *model.graph.output]:
        for dim in value.type.tensor_type.shape.dim:
            if dim.dim_param:
                dim.dim_param = "seq_len"
    model.graph.name = "text_conditioner"
    return model


def build_flow_lm_main(w: Weights, config: ModelConfig) -> onnx.ModelProto:
    """``sequence [1, S, latent]``, ``text_embeddings [1, N, d]`` and the states ->
    ``conditioning [1, cond]`` (the last position's), ``eos_logit [1, 1]``, states."""
    cfg = config.flow_lm
    t = cfg.transformer
    d, heads, kv_heads, head_dim = t.d_model, t.num_heads, t.kv_heads, t.head_dim
    group = heads // kv_heads
    manifest = flow_lm_manifest(config)
    g = GraphBuilder("flow_lm_main")
    sequence = g.input("sequence", np.float32, [1, "seq_len", cfg.latent_dim])
    text = g.input("text_embeddings", np.float32, [1, "text_len", d])
    states = {e.path: _state_io(g, e) for e in manifest}

    bos = g.weight("bos_emb", w["flow_lm.bos_emb"])
    sequence = g.op("Where", [g.op("IsNaN", [sequence]), bos, sequence])
    x = g.concat(
        [text, g.linear(sequence, w["flow_lm.input_linear.weight"], None, "input_linear")], axis=1
    )
    step = states["transformer.layers.0.self_attn/step"]
    n_new = g.shape_dim(x, 1)
    end = g.op("Add", [step, n_new])
    zero, one = g.const(0, np.int64), g.const(1, np.int64)
    new_index = g.op("Range", [zero, g.squeeze(n_new, [0]), one])
    cos, sin = rope_tables(g, g.op("Add", [new_index, step]), head_dim, t.max_period)
    # Query row r (absolute step + r) sees key column c iff c <= step + r.
    columns = g.op("Range", [zero, g.squeeze(end, [0]), one])
    mask = g.op(
        "LessOrEqual",
        [g.unsqueeze(columns, [0]), g.unsqueeze(g.op("Add", [new_index, step]), [1])],
    )
    scale, minus_inf = g.const(1.0 / np.sqrt(head_dim)), g.const(-np.inf)
    axis2 = g.const([2], np.int64)
    out_states: dict[str, str] = {}
    for i in range(t.num_layers):
        module = f"transformer.layers.{i}.self_attn"
        cache = states[f"{module}/cache"]
        q, k, v = attention_inputs(g, w, t, i, x, cos, sin)  # q [T,H,Dh], k/v [T,Hkv,Dh]
        new_kv = g.concat([g.unsqueeze(k, [0, 1]), g.unsqueeze(v, [0, 1])], axis=0)
        head = g.op("Slice", [cache, g.const([0], np.int64), step, axis2])
        tail = g.op("Slice", [cache, end, g.const([_END], np.int64), axis2])
        cache = g.concat([head, new_kv, tail], axis=2)
        out_states[f"{module}/cache"] = cache
        visible = g.op("Slice", [cache, g.const([0], np.int64), end, axis2])
        keys, values = (
            g.squeeze(g.slice(visible, j, j + 1, axis=0), [0, 1]) for j in (0, 1)
        )  # [P, Hkv, Dh]
        q = g.transpose(g.reshape(q, [-1, kv_heads, group, head_dim]), [1, 2, 0, 3])
        scores = g.op("MatMul", [q, g.unsqueeze(g.transpose(keys, [1, 2, 0]), [1])])
        scores = g.op("Where", [mask, g.op("Mul", [scores, scale]), minus_inf])
        probs = g.op("Softmax", [scores], axis=-1)
        attn = g.op("MatMul", [probs, g.unsqueeze(g.transpose(values, [1, 0, 2]), [1])])
        attn = g.reshape(g.transpose(attn, [2, 0, 1, 3]), [1, -1, heads * head_dim])
        x = attention_output_and_ffn(g, w, i, x, attn)
        out_states[f"{module}/step"] = g.op("Add", [states[f"{module}/step"], n_new])
        out_states[f"{module}/current_end"] = states[f"{module}/current_end"]

    last = g.reshape(g.slice(x, -1, _END, axis=1), [1, d])
    z, eos = output_heads(g, w, cfg, last)
    g.output(z, "conditioning", np.float32, [1, cfg.cond_dim])
    g.output(eos, "eos_logit", np.float32, [1, 1])
    for e in manifest:
        _state_out(g, e, out_states[e.path])
    return g.model()


def build_flow_lm_flow(w: Weights, cfg: FlowLMConfig) -> onnx.ModelProto:
    """``c [B, cond]``, ``s``, ``t [B, 1]``, ``x [B, latent]`` -> ``flow_dir [B, latent]``.

    Heads with fewer time conditions than LSD's two ignore ``s`` (one) or both."""
    g = GraphBuilder("flow_lm_flow")
    c = g.input("c", np.float32, ["batch", cfg.cond_dim])
    s = g.input("s", np.float32, ["batch", 1])
    t = g.input("t", np.float32, ["batch", 1])
    x = g.input("x", np.float32, ["batch", cfg.latent_dim])
    times = [s, t][2 - cfg.flow.num_time_conds :] if cfg.flow.num_time_conds else []
    g.output(
        flow_velocity(g, w, cfg, c, times, x), "flow_dir", np.float32, ["batch", cfg.latent_dim]
    )
    return g.model()


def _splice(
    model: onnx.ModelProto, g: GraphBuilder, before: list, after: list, drop: set[str]
) -> onnx.ModelProto:
    """``model`` with ``g``'s inputs and outputs instead of those in ``drop``, the nodes
    ``before`` ahead of its own and ``after`` behind them."""
    graph = model.graph
    inputs = [i for i in graph.input if i.name not in drop] + list(g.inputs)
    outputs = [o for o in graph.output if o.name not in drop] + list(g.outputs)
    new = helper.make_graph(
        before + list(graph.node) + after,
        graph.name,
        inputs,
        outputs,
        list(graph.initializer) + g.initializers,
    )
    out = helper.make_model(new, opset_imports=list(model.opset_import), producer_name="pockettts")
    out.ir_version = model.ir_version
    return out


def _adapter_builder(name: str) -> GraphBuilder:
    g = GraphBuilder(name)
    g._counter = itertools.count(10**7)  # names apart from the wrapped graph's
    return g


def _our_state_modules(cfg: MimiConfig, manifest: tuple[StateEntry, ...]) -> dict[str, str]:
    """Our decoder's state names -> the manifest module holding the same memory."""
    conv_modules = [
        int(m.group(1)) for e in manifest if (m := re.fullmatch(r"decoder\.model\.(\d+)", e.module))
    ]
    out = {"dec.conv_in": "decoder.model.0", "dec.conv_out": f"decoder.model.{max(conv_modules)}"}
    out["upsample"] = "upsample.convtr"
    for e in manifest:
        if m := re.fullmatch(r"decoder\.model\.(\d+)", e.module):
            if e.key == "partial":
                out[f"dec.up{m.group(1)}"] = e.module
        elif m := re.fullmatch(r"decoder\.model\.(\d+)\.block\.([13])", e.module):
            conv = "conv1" if m.group(2) == "1" else "conv2"
            out[f"dec.res{m.group(1)}.{conv}"] = e.module
    return out


def build_kevinahm_mimi_decoder(w: Weights, config: ModelConfig) -> onnx.ModelProto:
    """``latent [1, K, latent]`` + 56 states -> ``audio_frame [1, 1, K * 1920]`` + states."""
    cfg = config.mimi
    # Their format carries each upsampler's overlap: our decoder in the form that has it.
    model, our_states = build_mimi_decoder(w, cfg, overlap_states=True)
    manifest = mimi_manifest(cfg)
    by_path = {e.path: e for e in manifest}
    modules = _our_state_modules(cfg, manifest)
    g = _adapter_builder("mimi_decoder")
    latent = g.input("latent", np.float32, [1, "seq_len", cfg.quantizer_dimension])
    theirs = {e.path: _state_io(g, e) for e in manifest}
    before_start = len(g.nodes)
    g.op("Identity", [latent], out="latents")
    ctx = cfg.decoder_transformer.context
    capacity = g.const([CACHE_POSITIONS], np.int64)
    window = g.const(np.arange(-ctx, 0), np.int64)
    axis3 = 3
    layer_modules = [
        f"decoder_transformer.transformer.layers.{i}.self_attn"
        for i in range(cfg.decoder_transformer.num_layers)
    ]
    # In: their states -> ours (named state.<ours>).
    for spec in our_states:
        name = f"state.{spec.name}"
        if spec.name == "dec_tr.position":
            g.op("Identity", [theirs[f"{layer_modules[0]}/offset"]], out=name)
            continue
        if m := re.fullmatch(r"dec_tr\.l(\d+)\.(keys|values)", spec.name):
            module = layer_modules[int(m.group(1))]
            slots = g.op(
                "Mod", [g.op("Add", [window, theirs[f"{module}/end_offset"]]), capacity], fmod=0
            )
            ring = g.op("Gather", [theirs[f"{module}/cache"], slots], axis=axis3)  # [2,1,H,ctx,Dh]
            j = 0 if m.group(2) == "keys" else 1
            g.op("Squeeze", [g.slice(ring, j, j + 1, axis=0), g.const([0, 1], np.int64)], out=name)
            continue
        module = modules[spec.name]
        key = "partial" if spec.name.startswith(("dec.up", "upsample")) else "previous"
        value = theirs[f"{module}/{key}"]
        if key == "partial":  # [1, C, s] -> [1, s, C]
            g.op("Transpose", [value], out=name, perm=[0, 2, 1])
        else:  # [1, C, context] -> [context, C]
            g.op("Transpose", [g.squeeze(value, [0])], out=name, perm=[1, 0])
    before = g.nodes[before_start:]
    g.nodes = g.nodes[:before_start]

    # Out: ours (state_out.<ours>) -> theirs.
    out: dict[str, str] = {}
    position_in = theirs[f"{layer_modules[0]}/offset"]
    n_new = g.op("Sub", ["state_out.dec_tr.position", position_in])
    for i, module in enumerate(layer_modules):
        end_offset = g.op("Add", [theirs[f"{module}/end_offset"], n_new])
        slots = g.op("Mod", [g.op("Add", [window, end_offset]), capacity], fmod=0)
        kv = g.concat(
            [
                g.unsqueeze(f"state_out.dec_tr.l{i}.keys", [0, 1]),
                g.unsqueeze(f"state_out.dec_tr.l{i}.values", [0, 1]),
            ],
            axis=0,
        )  # [2, 1, H, ctx, Dh]
        index = g.op("Expand", [g.reshape(slots, [1, 1, 1, ctx, 1]), g.op("Shape", [kv])])
        out[f"{module}/cache"] = g.op(
            "ScatterElements", [theirs[f"{module}/cache"], index, kv], axis=axis3
        )
        out[f"{module}/end_offset"] = end_offset
        out[f"{module}/offset"] = g.op("Add", [theirs[f"{module}/offset"], n_new])
    for spec in our_states:
        if spec.name.startswith("dec_tr."):
            continue
        module = modules[spec.name]
        value = f"state_out.{spec.name}"
        if spec.name.startswith(("dec.up", "upsample")):
            out[f"{module}/partial"] = g.transpose(value, [0, 2, 1])
        else:
            out[f"{module}/previous"] = g.unsqueeze(g.transpose(value, [1, 0]), [0])
    g.output(g.unsqueeze("audio", [0]), "audio_frame", np.float32, [1, 1, "samples"])
    for path, entry in by_path.items():
        _state_out(g, entry, out.get(path, theirs[path]))  # the rest pass through
    drop = {i.name for i in model.graph.input} | {o.name for o in model.graph.output}
    return _splice(model, g, before, g.nodes, drop)


def build_kevinahm_mimi_encoder(w: Weights, cfg: MimiConfig) -> onnx.ModelProto:
    """``audio [1, 1, N]`` -> ``latents [1, ceil(N / 1920), d_model]`` (our encoder)."""
    model = build_mimi_encoder(w, cfg)
    for node in model.graph.node:
        node.input[:] = ["audio__flat" if i == "audio" else i for i in node.input]
    g = _adapter_builder("mimi_encoder")
    audio = g.input("audio", np.float32, [1, 1, "audio_len"])
    g.op("Reshape", [audio, g.const([1, -1], np.int64)], out="audio__flat")
    before = list(g.nodes)
    g.nodes = []
    d = w["flow_lm.speaker_proj_weight"].shape[0]
    g.output(g.unsqueeze("conditioning", [0]), "latents", np.float32, [1, "frames", d])
    return _splice(model, g, before, g.nodes, {"audio", "conditioning"})
