"""ONNX graph of the streaming Mimi decoder (latents -> 24 kHz audio).

Every piece of streaming memory is an explicit state tensor: the left
context of each causal convolution, the overlap ("partial") of each
transposed convolution, and a window of ``context`` keys/values per
transformer layer with the running position. A call takes ``state.<name>``
inputs and returns ``state_out.<name>``; feeding the outputs back in makes
any split of the latents into calls give the same audio.
"""

from __future__ import annotations

import numpy as np
import onnx

from pocketcli.config import MimiConfig, MimiTransformerConfig, SEANetConfig
from pocketcli.packs.mimi_layers import Weights, conv_weight, elu, mimi_transformer, rope_tables
from pocketcli.packs.onnx_graph import GraphBuilder
from pocketcli.packs.state_spec import StateSpec


class _StatefulGraph:
    """A GraphBuilder plus the list of state tensors it threads through."""

    def __init__(self, g: GraphBuilder) -> None:
        self.g = g
        self.states: list[StateSpec] = []

    def state(self, name: str, shape: tuple[int, ...], dtype: type = np.float32) -> str:
        dt = np.dtype(dtype)
        self.states.append(StateSpec(name, shape, dt.name))
        return self.g.input(f"state.{name}", dtype, list(shape))

    def update(self, name: str, value: str) -> None:
        spec = next(s for s in self.states if s.name == name)
        self.g.output(value, f"state_out.{name}", np.dtype(spec.dtype).type, list(spec.shape))


def _streaming_conv(sg: _StatefulGraph, x: str, w: Weights, prefix: str, name: str,
                    stride: int = 1, dilation: int = 1) -> str:
    """Causal conv whose left context comes from the previous call (zeros at start)."""
    g = sg.g
    weight, bias = conv_weight(w, prefix)
    c_in, k = weight.shape[1], weight.shape[2]
    context = (k - 1) * dilation + 1 - stride
    if context > 0:
        prev = sg.state(name, (1, c_in, context))
        x = g.concat([prev, x], axis=2)
        sg.update(name, g.slice(x, -context, np.iinfo(np.int64).max, axis=2))
    inputs = [x, g.weight(f"{name}.weight", weight)]
    if bias is not None:
        inputs.append(g.weight(f"{name}.bias", bias))
    return g.op("Conv", inputs, kernel_shape=[k], strides=[stride], dilations=[dilation])


def _streaming_conv_transpose(sg: _StatefulGraph, x: str, w: Weights, prefix: str, name: str,
                              stride: int, groups: int = 1) -> str:
    """Transposed conv whose overlapping tail is carried into the next call.

    With kernel = 2 * stride (every Mimi upsampler), output block t is
    ``A_t + B_{t-1}`` where A and B are the two kernel halves applied to input
    column t: a MatMul (or a per-channel product when depthwise) plus a shift,
    several times faster than ONNX Runtime's ConvTranspose and quantisable.
    """
    g = sg.g
    weight, bias = conv_weight(w, prefix)
    c_in, c_out, k = weight.shape[0], weight.shape[1] * groups, weight.shape[2]
    if k != 2 * stride or groups not in (1, c_in):
        return _generic_conv_transpose(sg, x, weight, bias, name, stride, groups)
    partial = sg.state(name, (1, c_out, stride))
    columns = g.transpose(x, [2, 1, 0])                                  # [T, C_in, 1]
    if groups == 1:
        halves = g.op("MatMul", [g.squeeze(columns, [2]),
                                 g.weight(f"{name}.weight", weight.reshape(c_in, c_out * k))])
        halves = g.reshape(halves, [-1, c_out, k])                       # [T, C_out, k]
    else:
        halves = g.op("Mul", [columns, g.weight(f"{name}.weight", weight[:, 0, :])])
    first, second = g.split(halves, [stride, stride], axis=2)            # A, B: [T, C_out, s]
    carried = g.concat([partial, second], axis=0)                        # [T+1, C_out, s]
    n = g.shape_dim(x, 2)
    y = g.op("Add", [first, g.op("Slice", [carried, g.const([0], np.int64), n,
                                           g.const([0], np.int64)])])
    sg.update(name, g.slice(carried, -1, np.iinfo(np.int64).max, axis=0))
    if bias is not None:
        y = g.op("Add", [y, g.const(bias.reshape(-1, 1))])
    return g.reshape(g.transpose(y, [1, 0, 2]), [1, c_out, -1])


def _generic_conv_transpose(sg: _StatefulGraph, x: str, weight: np.ndarray,
                            bias: np.ndarray | None, name: str, stride: int,
                            groups: int) -> str:
    g = sg.g
    c_out, k = weight.shape[1] * groups, weight.shape[2]
    inputs = [x, g.weight(f"{name}.weight", weight)]
    if bias is not None:
        inputs.append(g.weight(f"{name}.bias", bias))
    y = g.op("ConvTranspose", inputs, kernel_shape=[k], strides=[stride], group=groups)
    tail = k - stride
    if tail <= 0:
        return y
    partial = sg.state(name, (1, c_out, tail))
    pad_amount = g.op("Sub", [g.shape_dim(y, 2), g.const([tail], np.int64)])
    pads = g.concat([g.const([0, 0, 0, 0, 0], np.int64), pad_amount], axis=0)
    y = g.op("Add", [y, g.op("Pad", [partial, pads])])
    carried = g.slice(y, -tail, np.iinfo(np.int64).max, axis=2)
    if bias is not None:
        carried = g.op("Sub", [carried, g.const(bias.reshape(-1, 1))])
    sg.update(name, carried)
    return g.slice(y, 0, -tail, axis=2)


def _seanet_decoder(sg: _StatefulGraph, x: str, w: Weights, cfg: SEANetConfig) -> str:
    p = "mimi.decoder.model"
    idx = 0
    x = _streaming_conv(sg, x, w, f"{p}.{idx}.conv", "dec.conv_in")
    idx += 1
    for ratio in cfg.ratios:
        x = elu(sg.g, x)
        idx += 1
        x = _streaming_conv_transpose(sg, x, w, f"{p}.{idx}.convtr", f"dec.up{idx}", ratio)
        idx += 1
        for j in range(cfg.n_residual_layers):
            block = f"{p}.{idx}.block"
            h = elu(sg.g, x)
            h = _streaming_conv(sg, h, w, f"{block}.1.conv", f"dec.res{idx}.conv1",
                                dilation=cfg.dilation_base**j)
            h = elu(sg.g, h)
            h = _streaming_conv(sg, h, w, f"{block}.3.conv", f"dec.res{idx}.conv2")
            x = sg.g.op("Add", [x, h])
            idx += 1
    x = elu(sg.g, x)
    idx += 1
    return _streaming_conv(sg, x, w, f"{p}.{idx}.conv", "dec.conv_out")


def _windowed_transformer(sg: _StatefulGraph, x: str, w: Weights, prefix: str,
                          cfg: MimiTransformerConfig, name: str) -> str:
    """Streaming transformer over ``x [1, T, d]`` with attention limited to ``context``.

    Each layer keeps the keys and values of the last ``context`` positions as
    state; new queries attend to that window plus the new keys.
    """
    g = sg.g
    heads, ctx = cfg.num_heads, cfg.context
    head_dim = cfg.d_model // heads
    position = sg.state(f"{name}.position", (1,), np.int64)
    n_new = g.shape_dim(x, 1)
    new_index = g.op("Range", [g.const(0, np.int64), g.squeeze(n_new, [0]), g.const(1, np.int64)])
    q_pos = g.op("Add", [new_index, position])                    # absolute query positions
    k_pos = g.concat([
        g.op("Add", [g.const(np.arange(-ctx, 0), np.int64), position]),
        q_pos,
    ], axis=0)                                                    # window, then new keys
    delta = g.op("Sub", [g.unsqueeze(q_pos, [1]), g.unsqueeze(k_pos, [0])])
    mask = g.op("And", [
        g.op("And", [
            g.op("GreaterOrEqual", [g.unsqueeze(k_pos, [0]), g.const(0, np.int64)]),
            g.op("GreaterOrEqual", [delta, g.const(0, np.int64)]),
        ]),
        g.op("Less", [delta, g.const(ctx, np.int64)]),
    ])
    cos, sin = rope_tables(g, q_pos, head_dim, cfg.max_period)
    scale = g.const(1.0 / np.sqrt(head_dim))
    sg.update(f"{name}.position", g.op("Add", [position, n_new]))

    def attend(ln: str, q: str, k: str, v: str) -> str:
        keys = g.concat([sg.state(f"{ln}.keys", (heads, ctx, head_dim)), k], axis=1)
        values = g.concat([sg.state(f"{ln}.values", (heads, ctx, head_dim)), v], axis=1)
        sg.update(f"{ln}.keys", g.slice(keys, -ctx, np.iinfo(np.int64).max, axis=1))
        sg.update(f"{ln}.values", g.slice(values, -ctx, np.iinfo(np.int64).max, axis=1))
        scores = g.op("Mul", [g.op("MatMul", [q, g.transpose(keys, [0, 2, 1])]), scale])
        scores = g.op("Where", [mask, scores, g.const(-np.inf)])
        return g.op("MatMul", [g.op("Softmax", [scores], axis=-1), values])  # [H, T, Dh]

    return mimi_transformer(g, x, w, prefix, cfg, name, cos, sin, attend)


def build_mimi_decoder(w: Weights, cfg: MimiConfig) -> tuple[onnx.ModelProto, list[StateSpec]]:
    """Normalised latents ``[1, K, latent_dim]`` -> audio ``[1, K * samples_per_frame]``."""
    g = GraphBuilder("mimi_decoder")
    sg = _StatefulGraph(g)
    latents = g.input("latents", np.float32, [1, "frames", cfg.quantizer_dimension])
    x = g.op("Add", [g.op("Mul", [latents, g.weight("emb_std", w["flow_lm.emb_std"])]),
                     g.weight("emb_mean", w["flow_lm.emb_mean"])])
    proj = w["mimi.quantizer.output_proj.weight"][:, :, 0]
    x = g.transpose(g.linear(x, proj, None, "quantizer.output_proj"), [0, 2, 1])
    x = _streaming_conv_transpose(sg, x, w, "mimi.upsample.convtr.convtr", "upsample",
                                  stride=cfg.upsample_stride,
                                  groups=w["mimi.upsample.convtr.convtr.weight"].shape[0])
    x = g.transpose(x, [0, 2, 1])
    x = _windowed_transformer(sg, x, w, "mimi.decoder_transformer", cfg.decoder_transformer,
                              "dec_tr")
    x = g.transpose(x, [0, 2, 1])
    audio = _seanet_decoder(sg, x, w, cfg.decoder_seanet)
    g.output(g.reshape(audio, [1, -1]), "audio", np.float32, [1, "samples"])
    return g.model(), sg.states
