"""The browser pack ("Pocket-TTS-ONNX-WebGPU") layout, written from a Kyutai checkpoint.

Three graphs a web page runs with ONNX Runtime Web, plus the files its driver reads:

- ``onnx/text_embed.onnx``: ``token_ids [1, N]`` -> ``text_emb [1, N, d]``; the table
  is 4-bit blocks (GatherBlockQuantized);
- ``onnx/flow_lm.onnx``: ``emb [1, T, d]``, ``noise [1, latent]`` and the KV cache as
  ``past_key_i`` / ``past_value_i [1, kv_heads, P, head_dim]`` -> ``latent [1, 1, latent]``,
  ``eos_logit [1, 1]``, ``next_emb [1, 1, d]`` (the next frame's input) and
  ``present_key_i`` / ``present_value_i [1, kv_heads, P + T, head_dim]``; the flow head
  runs inside (the sampler unrolled over the model's default decode steps); weights are
  4-bit MatMulNBits blocks;
- ``onnx/mimi_decoder.onnx``: ``latent [1, 1, latent]`` and Mimi's streaming state (names
  and shapes in ``pocket_tts.json``, zeros at the start; each ``<name>_out`` is the next
  call's ``<name>``) -> ``pcm [1, 1, samples_per_frame]``; convolution weights are int8
  with DequantizeLinear;
- ``voice_alba.bin`` (float32 ``[frames, d]``: ``bos_before_voice`` when the model has one,
  then the conditioning of a voice clip), ``bos_emb.bin`` (float32 ``[1, 1, d]``),
  ``tokenizer.json`` and ``pocket_tts.json``.

Quantisation needs no calibration: symmetric round to nearest, one float32 scale per
block of 32 weights (4-bit and int8 alike); activations stay float32 (no
``accuracy_level`` on MatMulNBits; the runner keeps ONNX Runtime from fusing the int8
DequantizeLinear into int8-activation kernels).
The graphs are our own graph code (``flowlm_graphs``, ``mimi_graphs``), renamed.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

from pocketcli.atomic import atomic_folder
from pocketcli.config import FlowLMConfig, ModelConfig
from pocketcli.errors import UserError
from pocketcli.packs.checkpoint import check_checkpoint, read_checkpoint
from pocketcli.packs.encoder_weights import cloning_support
from pocketcli.packs.flowlm_graphs import (
    attention_inputs,
    attention_output_and_ffn,
    flow_velocity,
    output_heads,
)
from pocketcli.packs.mimi_encoder_graph import build_mimi_encoder
from pocketcli.packs.mimi_graphs import build_mimi_decoder
from pocketcli.packs.onnx_graph import GraphBuilder
from pocketcli.packs.quantize import (
    FLOAT_WEIGHT_PREFIXES,
    FLOAT_WEIGHTS,
    INT4_BLOCK_SIZE,
    quantise_int4,
)
from pocketcli.packs.rope import rope_tables
from pocketcli.packs.state_spec import StateSpec
from pocketcli.packs.web_layout import (  # noqa: F401 - is_web_pack, FILES: re-exported
    BOS_FILE,
    CONFIG_FILE,
    FILES,
    FLOW_LM,
    FORMAT,
    GRAPH_DIR,
    MIMI_DECODER,
    TEXT_EMBED,
    TOKENIZER_FILE,
    VOICE_FILE,
    WEB_FOLDER,
    is_web_pack,
)
from pocketcli.packs.web_tokenizer import sentencepiece_to_json

Weights = dict[str, np.ndarray]
Progress = Callable[[str], None]

# The model card's generation settings.
EOS_THRESHOLD = -4.0
MIN_FRAMES = 6
TEMPERATURE = 0.3
FADE_IN_MS = 5
_END = np.iinfo(np.int64).max


# -- graphs ---------------------------------------------------------------------------
def _dedupe_initializers(model: onnx.ModelProto) -> onnx.ModelProto:
    """Keeps the first of same-named initializers (an unrolled sampler registers the
    flow head's weights once per step; they are the same arrays)."""
    seen: set[str] = set()
    keep = []
    for init in model.graph.initializer:
        if init.name not in seen:
            seen.add(init.name)
            keep.append(init)
    del model.graph.initializer[:]
    model.graph.initializer.extend(keep)
    return model


def build_web_text_embed(w: Weights, cfg: FlowLMConfig) -> onnx.ModelProto:
    """``token_ids [1, N]`` -> ``text_emb [1, N, d]``: the table as 4-bit blocks."""
    d = cfg.transformer.d_model
    table = w["flow_lm.conditioner.embed.weight"].astype(np.float32)
    if cfg.lookup_table.rank is not None:  # low-rank tables: the product, so one lookup
        table = table @ w["flow_lm.conditioner.proj.weight"].astype(np.float32).T
    packed, scales = _quantise_blocks_uint4(table)
    g = GraphBuilder("text_embed")
    ids = g.input("token_ids", np.int64, [1, "N"])
    emb = g.op(
        "GatherBlockQuantized",
        [g.weight("embed.qweight", packed), ids, g.weight("embed.scales", scales)],
        domain="com.microsoft",
        gather_axis=0,
        quantize_axis=1,
        block_size=INT4_BLOCK_SIZE,
        bits=4,
    )
    g.output(emb, "text_emb", np.float32, [1, "N", d])
    model = g.model()
    model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return model


def _quantise_blocks_uint4(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric round-to-nearest 4-bit blocks of 32 along rows: values in [-8, 7] stored
    as uint4 around the default zero point 8, two per byte (low nibble first)."""
    rows, cols = table.shape
    pad = -cols % INT4_BLOCK_SIZE
    blocks = np.pad(table, ((0, 0), (0, pad))).reshape(rows, -1, INT4_BLOCK_SIZE)
    scales = np.abs(blocks).max(axis=2) / 7.0
    scales[scales == 0] = 1.0
    q = np.clip(np.rint(blocks / scales[..., None]), -8, 7).astype(np.int16) + 8
    q = q.reshape(rows, -1)[:, :cols].astype(np.uint8)
    if cols % 2:
        q = np.pad(q, ((0, 0), (0, 1)), constant_values=8)
    packed = (q[:, 0::2] | (q[:, 1::2] << 4)).astype(np.uint8)
    return packed, scales.astype(np.float32)


def build_web_flow_lm(w: Weights, cfg: FlowLMConfig, decode_steps: int = 1) -> onnx.ModelProto:
    """The backbone on ``emb`` with a past/present KV cache, the EOS head, the flow head
    sampled from ``noise`` and ``input_linear`` of the sampled latent (``next_emb``)."""
    t = cfg.transformer
    d, heads, kv_heads, head_dim = t.d_model, t.num_heads, t.kv_heads, t.head_dim
    group = heads // kv_heads
    g = GraphBuilder("flow_lm")
    x = g.input("emb", np.float32, [1, "T", d])
    noise = g.input("noise", np.float32, [1, cfg.latent_dim])
    past = [
        (
            g.input(f"past_key_{i}", np.float32, [1, kv_heads, "P", head_dim]),
            g.input(f"past_value_{i}", np.float32, [1, kv_heads, "P", head_dim]),
        )
        for i in range(t.num_layers)
    ]
    zero, one = g.const(0, np.int64), g.const(1, np.int64)
    n_past = g.shape_dim(past[0][0], 2)
    n_new = g.shape_dim(x, 1)
    total = g.op("Add", [n_past, n_new])
    new_index = g.op("Add", [g.op("Range", [zero, g.squeeze(n_new, [0]), one]), n_past])
    cos, sin = rope_tables(g, new_index, head_dim, t.max_period)
    columns = g.op("Range", [zero, g.squeeze(total, [0]), one])
    mask = g.op("LessOrEqual", [g.unsqueeze(columns, [0]), g.unsqueeze(new_index, [1])])
    scale, minus_inf = g.const(1.0 / np.sqrt(head_dim)), g.const(-np.inf)
    for i, (past_key, past_value) in enumerate(past):
        q, k, v = attention_inputs(g, w, t, i, x, cos, sin)  # q [T,H,Dh], k/v [T,Hkv,Dh]
        keys = g.concat([past_key, g.unsqueeze(g.transpose(k, [1, 0, 2]), [0])], axis=2)
        values = g.concat([past_value, g.unsqueeze(g.transpose(v, [1, 0, 2]), [0])], axis=2)
        g.output(keys, f"present_key_{i}", np.float32, [1, kv_heads, "P_T", head_dim])
        g.output(values, f"present_value_{i}", np.float32, [1, kv_heads, "P_T", head_dim])
        q = g.transpose(g.reshape(q, [-1, kv_heads, group, head_dim]), [1, 2, 0, 3])
        k_t = g.unsqueeze(g.transpose(g.squeeze(keys, [0]), [0, 2, 1]), [1])  # [Hkv,1,Dh,P+T]
        scores = g.op("MatMul", [q, k_t])
        scores = g.op("Where", [mask, g.op("Mul", [scores, scale]), minus_inf])
        probs = g.op("Softmax", [scores], axis=-1)
        attn = g.op("MatMul", [probs, g.unsqueeze(g.squeeze(values, [0]), [1])])
        attn = g.reshape(g.transpose(attn, [2, 0, 1, 3]), [1, -1, heads * head_dim])
        x = attention_output_and_ffn(g, w, i, x, attn)
    last = g.reshape(g.slice(x, -1, _END, axis=1), [1, d])
    z, eos = output_heads(g, w, cfg, last)
    latent = _unrolled_sampler(g, w, cfg, z, noise, decode_steps)
    g.output(
        g.reshape(latent, [1, 1, cfg.latent_dim]), "latent", np.float32, [1, 1, cfg.latent_dim]
    )
    g.output(eos, "eos_logit", np.float32, [1, 1])
    next_emb = g.linear(latent, w["flow_lm.input_linear.weight"], None, "input_linear")
    g.output(g.reshape(next_emb, [1, 1, d]), "next_emb", np.float32, [1, 1, d])
    # Outputs in the contract's order: latent, eos_logit, next_emb, then the cache.
    order = ["latent", "eos_logit", "next_emb"]
    outputs = sorted(g.outputs, key=lambda o: order.index(o.name) if o.name in order else 3)
    g.outputs = outputs
    return _dedupe_initializers(g.model())


def _unrolled_sampler(
    g: GraphBuilder, w: Weights, cfg: FlowLMConfig, z: str, noise: str, steps: int
) -> str:
    """``runtimes.flow.integrate_flow`` written as graph ops (same arithmetic)."""
    kind = cfg.flow.type
    if kind == "drifting":
        return flow_velocity(g, w, cfg, z, [], noise)
    if kind == "pointwise":
        return g.op("Add", [noise, flow_velocity(g, w, cfg, z, [], noise)])
    if kind not in ("lsd", "flow_matching"):
        raise ValueError(f"unknown flow head type {kind!r}")
    x = noise
    for i in range(steps):
        s, t = i / steps, (i + 1) / steps
        times = [
            g.const(np.full((1, 1), v, np.float32)) for v in ((s, t) if kind == "lsd" else (s,))
        ]
        times = times[len(times) - cfg.flow.num_time_conds :] if cfg.flow.num_time_conds else []
        v = flow_velocity(g, w, cfg, z, times, x)
        x = g.op("Add", [x, g.op("Div", [v, g.const(np.float32(steps))])])
    return x


def _state_name(spec: StateSpec) -> str:
    return spec.name.replace(".", "_")


def build_web_mimi_decoder(w: Weights, config: ModelConfig) -> tuple[onnx.ModelProto, list[dict]]:
    """Our streaming decoder renamed to the browser layout: ``latent``, states ``<name>``
    -> ``pcm [1, 1, samples]``, states ``<name>_out``. Returns the graph and the state list."""
    model, states = build_mimi_decoder(w, config.mimi)
    graph = model.graph
    rename = {"latents": "latent", "audio": "audio__flat"}
    for spec in states:
        rename[f"state.{spec.name}"] = _state_name(spec)
        rename[f"state_out.{spec.name}"] = f"{_state_name(spec)}_out"
    for node in graph.node:
        node.input[:] = [rename.get(n, n) for n in node.input]
        node.output[:] = [rename.get(n, n) for n in node.output]
    for value in [*graph.input, *graph.output]:
        value.name = rename.get(value.name, value.name)
    samples = config.mimi.samples_per_frame
    shape = helper.make_tensor("pcm__shape", onnx.TensorProto.INT64, [3], [1, 1, samples])
    graph.initializer.append(shape)
    graph.node.append(helper.make_node("Reshape", ["audio__flat", "pcm__shape"], ["pcm"]))
    outputs = [o for o in graph.output if o.name != "audio__flat"]
    del graph.output[:]
    graph.output.append(
        helper.make_tensor_value_info("pcm", onnx.TensorProto.FLOAT, [1, 1, samples])
    )
    graph.output.extend(outputs)
    entries = [{"name": _state_name(s), "shape": list(s.shape), "dtype": s.dtype} for s in states]
    return _quantise_int8_weights(model), entries


def _quantise_int8_weights(model: onnx.ModelProto) -> onnx.ModelProto:
    """Float MatMul weights ``[in, out]`` (our convolutions are MatMuls) -> int8 with one
    symmetric round-to-nearest scale per block of 32 inputs of each output, and a
    blocked DequantizeLinear (opset 21) in front. RoPE's swap matrix and the last
    convolution (which writes the samples) stay float, as in our int8 packs."""
    graph = model.graph
    inits = {i.name: i for i in graph.initializer}
    targets = {
        n.input[1]
        for n in graph.node
        if n.op_type == "MatMul"
        and len(n.input) == 2
        and n.input[1] in inits
        and len(inits[n.input[1]].dims) == 2
        and not n.input[1].startswith(FLOAT_WEIGHT_PREFIXES)
        and n.input[1] not in FLOAT_WEIGHTS
    }
    block = INT4_BLOCK_SIZE
    new_nodes = []
    for name in sorted(targets):
        wt = numpy_helper.to_array(inits[name]).astype(np.float32)
        rows = wt.shape[0]
        padded = np.pad(wt, ((0, -rows % block), (0, 0)))
        blocks = padded.reshape(-1, block, wt.shape[1])
        scale = np.abs(blocks).max(axis=1) / 127.0  # [ceil(in / 32), out]
        scale[scale == 0] = 1.0
        q = np.clip(np.rint(blocks / scale[:, None]), -127, 127).astype(np.int8)
        q = q.reshape(-1, wt.shape[1])[:rows]
        graph.initializer.remove(inits[name])
        graph.initializer.extend(
            [
                numpy_helper.from_array(q, f"{name}.q"),
                numpy_helper.from_array(scale.astype(np.float32), f"{name}.scale"),
            ]
        )
        new_nodes.append(
            helper.make_node(
                "DequantizeLinear",
                [f"{name}.q", f"{name}.scale"],
                [name],
                name=f"{name}.dq",
                axis=0,
                block_size=block,
            )
        )
    nodes = new_nodes + list(graph.node)
    del graph.node[:]
    graph.node.extend(nodes)
    for opset in model.opset_import:
        if opset.domain in ("", "ai.onnx"):
            opset.version = max(opset.version, 21)
    model.ir_version = max(model.ir_version, 10)
    return model


# -- the voice ----------------------------------------------------------------------
def voice_rows(w: Weights, config: ModelConfig, clip_24k: np.ndarray) -> np.ndarray:
    """``[frames, d]``: ``bos_before_voice`` (when the model has one), then the clip's
    conditioning from our Mimi encoder graph (run here with ONNX Runtime)."""
    import onnxruntime as ort

    model = build_mimi_encoder(w, config.mimi)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    audio = np.ascontiguousarray(clip_24k, np.float32).reshape(1, -1)
    cond = session.run(None, {"audio": audio})[0]
    d = config.flow_lm.transformer.d_model
    if config.flow_lm.insert_bos_before_voice:
        bos = w["flow_lm.bos_before_voice"].astype(np.float32).reshape(1, d)
        cond = np.concatenate([bos, cond])
    return np.ascontiguousarray(cond, np.float32)


# -- export ---------------------------------------------------------------------------
def pack_config(
    config: ModelConfig,
    decoder_states: list[dict],
    voice_frames: int,
    decode_steps: int,
    source: dict | None,
) -> dict:
    fl, t = config.flow_lm, config.flow_lm.transformer
    return {
        "format": FORMAT,
        "version": 1,
        "sample_rate": config.mimi.sample_rate,
        "samples_per_frame": config.mimi.samples_per_frame,
        "frame_rate": config.mimi.sample_rate / config.mimi.samples_per_frame,
        "d_model": t.d_model,
        "latent_dim": fl.latent_dim,
        "num_layers": t.num_layers,
        "kv_heads": t.kv_heads,
        "head_dim": t.head_dim,
        "eos_threshold": EOS_THRESHOLD,
        "min_frames": MIN_FRAMES,
        "temperature": TEMPERATURE,
        "fade_in_ms": FADE_IN_MS,
        "decode_steps": decode_steps,
        "max_chunk_tokens": 50,
        "voices": {"alba": {"file": VOICE_FILE, "shape": [voice_frames, t.d_model]}},
        "bos_emb": {"file": BOS_FILE, "shape": [1, 1, t.d_model]},
        "mimi_state": decoder_states,
        "config": config.to_dict(),
        "source": portable_source(source or {}),
    }


def portable_source(source: dict) -> dict:
    """``source`` without this machine's folders: a local config, checkpoint or tokenizer
    is recorded by its file name (a pack is copied elsewhere; its file says nothing of
    where it was made), a URL as it is."""
    local = {k for k, v in source.items() if isinstance(v, str) and "://" not in v}
    named = local & {"config", "weights", "tokenizer"}
    return {key: Path(value).name if key in named else value for key, value in source.items()}


def export_web_pack(
    checkpoint: str | Path,
    config: ModelConfig,
    tokenizer: str | Path,
    voice_clip: np.ndarray,
    out_dir: str | Path,
    source: dict | None = None,
    progress: Progress | None = None,
    decode_steps: int = 1,
    force: bool = False,
) -> Path:
    """Writes the browser pack to ``out_dir`` (replacing one this exporter wrote, or any
    folder with ``force``: ``atomic.check_folder_output``); returns ``out_dir``."""
    out_dir, tokenizer = Path(out_dir), Path(tokenizer)
    say = progress or (lambda _msg: None)
    say("reading checkpoint")
    weights = read_checkpoint(checkpoint)
    check_checkpoint(weights, config)
    cloning = cloning_support(weights, config)
    if not cloning.available:
        raise UserError(
            f"the browser pack's voice_alba.bin is a clip's Mimi encoding: {cloning.reason}"
        )
    fl = config.flow_lm
    with atomic_folder(out_dir, WEB_FOLDER, "exporting", force) as work:
        (work / GRAPH_DIR).mkdir()
        say("building text_embed")
        onnx.save_model(build_web_text_embed(weights, fl), str(work / TEXT_EMBED))
        say("building flow_lm (4-bit)")
        with tempfile.TemporaryDirectory(dir=work) as tmp:
            fp32 = Path(tmp) / "flow_lm_fp32.onnx"
            onnx.save_model(build_web_flow_lm(weights, fl, decode_steps), str(fp32))
            # The contract's activations are float32: no int8 activations on any backend.
            quantise_int4(fp32, Path(tmp) / "flow_lm.onnx", accuracy_level=None)
            _inline(Path(tmp) / "flow_lm.onnx", work / FLOW_LM)
        say("building mimi_decoder (int8)")
        decoder, states = build_web_mimi_decoder(weights, config)
        onnx.save_model(decoder, str(work / MIMI_DECODER))
        say("encoding the voice")
        voice = voice_rows(weights, config, voice_clip)
        voice.tofile(work / VOICE_FILE)
        bos = weights["flow_lm.bos_emb"].astype(np.float32).reshape(1, -1)
        bos_emb = bos @ weights["flow_lm.input_linear.weight"].astype(np.float32).T
        bos_emb.astype(np.float32).reshape(1, 1, -1).tofile(work / BOS_FILE)
        # The published layout has tokenizer.json: a SentencePiece model is converted to it.
        if tokenizer.suffix == ".json":
            shutil.copyfile(tokenizer, work / TOKENIZER_FILE)
        else:
            (work / TOKENIZER_FILE).write_text(sentencepiece_to_json(tokenizer), encoding="utf-8")
        meta = pack_config(config, states, voice.shape[0], decode_steps, source)
        meta["tokenizer_file"] = TOKENIZER_FILE
        (work / CONFIG_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return out_dir


def _inline(src: Path, dst: Path) -> None:
    """One file per graph, weights inside (what a browser fetches)."""
    model = onnx.load(str(src))
    onnx.save_model(model, str(dst), save_as_external_data=False)
