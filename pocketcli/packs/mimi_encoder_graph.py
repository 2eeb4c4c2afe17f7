"""ONNX graph of the Mimi encoder with the speaker projection (voice cloning).

audio ``[1, samples]`` at 24 kHz -> conditioning ``[frames, d_model]``, the
rows the FlowLM is prefilled with (after ``bos_before_voice``). Equal to
pocket-tts's ``mimi.encode_to_latent`` followed by ``latents @
speaker_proj_weight.T``: the audio is zero-padded at the end to whole frames
(``pad_for_conv1d``), every convolution is causal with zero left context
(replicate for the downsampler, as its first streaming call does), and the
encoder transformer runs over the whole prompt at once.

pocket-tts runs that transformer with a full ``[T, T]`` mask, quadratic in
the prompt length although each position only sees the previous ``context``
(250) positions. Here the positions are cut into blocks of ``context``: a
block's queries can only see their own block and the one before, so each
block attends to ``2 * context`` keys. The same keys get the same weights, so
the result is the same up to float rounding, at a linear cost.
"""

from __future__ import annotations

import numpy as np
import onnx

from pocketcli.config import MimiConfig, MimiTransformerConfig, SEANetConfig
from pocketcli.packs.mimi_layers import Weights, conv_weight, elu, mimi_transformer
from pocketcli.packs.onnx_graph import GraphBuilder
from pocketcli.packs.rope import rope_tables

SEANET_ENCODER = "mimi.encoder.model"
ENCODER_TRANSFORMER = "mimi.encoder_transformer"
DOWNSAMPLE = "mimi.downsample.conv.conv"
SPEAKER_PROJ = "flow_lm.speaker_proj_weight"


def _causal_conv(
    g: GraphBuilder,
    x: str,
    w: Weights,
    prefix: str,
    name: str,
    stride: int = 1,
    dilation: int = 1,
    pad_mode: str = "constant",
) -> str:
    """A StreamingConv1d's first call on ``x [1, C, T]``: left context of zeros or of x[0]."""
    weight, bias = conv_weight(w, prefix)
    k = weight.shape[2]
    context = (k - 1) * dilation + 1 - stride
    attrs: dict = {"kernel_shape": [k], "strides": [stride], "dilations": [dilation]}
    if context > 0 and pad_mode == "replicate":
        x = g.op("Pad", [x, g.const([0, 0, context, 0, 0, 0], np.int64)], mode="edge")
    elif context > 0:
        attrs["pads"] = [context, 0]
    inputs = [x, g.weight(f"{name}.weight", weight)]
    if bias is not None:
        inputs.append(g.weight(f"{name}.bias", bias))
    return g.op("Conv", inputs, **attrs)


def _seanet_encoder(g: GraphBuilder, x: str, w: Weights, cfg: SEANetConfig) -> str:
    """SEANetEncoder: conv, then per ratio (reversed) residual blocks + strided conv."""
    p = SEANET_ENCODER
    mode = cfg.pad_mode
    x = _causal_conv(g, x, w, f"{p}.0.conv", "enc.conv_in", pad_mode=mode)
    idx = 1
    for ratio in reversed(cfg.ratios):
        for j in range(cfg.n_residual_layers):
            block = f"{p}.{idx}.block"
            h = _causal_conv(
                g,
                elu(g, x),
                w,
                f"{block}.1.conv",
                f"enc.res{idx}.conv1",
                dilation=cfg.dilation_base**j,
                pad_mode=mode,
            )
            h = _causal_conv(
                g, elu(g, h), w, f"{block}.3.conv", f"enc.res{idx}.conv2", pad_mode=mode
            )
            x = g.op("Add", [x, h])
            idx += 1
        idx += 1  # the ELU
        x = _causal_conv(
            g, elu(g, x), w, f"{p}.{idx}.conv", f"enc.down{idx}", stride=ratio, pad_mode=mode
        )
        idx += 1
    idx += 1
    return _causal_conv(g, elu(g, x), w, f"{p}.{idx}.conv", "enc.conv_out", pad_mode=mode)


def _pad_to_multiple(g: GraphBuilder, x: str, axis: int, rank: int, multiple: int) -> str:
    """Zeros at the end of ``axis`` up to a multiple of ``multiple``."""
    n = g.shape_dim(x, axis)
    m = g.const([multiple], np.int64)
    rounded = g.op(
        "Mul", [g.op("Div", [g.op("Add", [n, g.const([multiple - 1], np.int64)]), m]), m]
    )
    extra = g.op("Sub", [rounded, n])
    zeros_before = g.const([0] * (rank + axis), np.int64)
    zeros_after = g.const([0] * (rank - axis - 1), np.int64)
    pads = g.concat([zeros_before, extra, zeros_after], axis=0)
    return g.op("Pad", [x, pads])


def _blocked_transformer(g: GraphBuilder, x: str, w: Weights, cfg: MimiTransformerConfig) -> str:
    """The encoder transformer over ``x [1, T, d]``, causal with ``context``, in blocks."""
    heads, block = cfg.num_heads, cfg.context
    head_dim = cfg.d_model // heads
    n_real = g.shape_dim(x, 1)
    x = _pad_to_multiple(g, x, axis=1, rank=3, multiple=block)
    # Padded rows sit after every real row: causal attention never lets a real row see them.
    n = g.shape_dim(x, 1)
    positions = g.op("Range", [g.const(0, np.int64), g.squeeze(n, [0]), g.const(1, np.int64)])
    cos, sin = rope_tables(g, positions, head_dim, cfg.max_period)
    n_blocks = g.op("Div", [n, g.const([block], np.int64)])

    # Query i of a block vs key j of [previous block, this block]: delta = i + block - j.
    def arange(stop: str | int) -> str:
        """Range(0, stop) with true scalars (GraphBuilder constants are 1-D)."""

        def scalar(v: str | int) -> str:
            return g.squeeze(g.const([v], np.int64) if isinstance(v, int) else v, [0])

        return g.op("Range", [scalar(0), scalar(stop), scalar(1)])

    i, j = g.unsqueeze(arange(block), [1]), g.unsqueeze(arange(2 * block), [0])
    delta = g.op("Sub", [g.op("Add", [i, g.const(block, np.int64)]), j])
    in_window = g.op(
        "And",
        [
            g.op("GreaterOrEqual", [delta, g.const(0, np.int64)]),
            g.op("Less", [delta, g.const(cfg.context, np.int64)]),
        ],
    )
    before_start = g.op("Less", [j, g.const(block, np.int64)])  # the first block's "previous"
    is_first = g.unsqueeze(g.op("Equal", [arange(n_blocks), g.const(0, np.int64)]), [1, 2])
    mask = g.op("And", [in_window, g.op("Not", [g.op("And", [is_first, before_start])])])
    scale = g.const(1.0 / np.sqrt(head_dim))
    shape4 = [heads, -1, block, head_dim]
    shift = g.const([0, block, 0, 0, 0, 0], np.int64)

    def with_previous(t: str) -> str:
        """[H, T, Dh] -> [H, n_blocks, 2 block, Dh]: each block after the one before it."""
        previous = g.slice(g.op("Pad", [t, shift]), 0, -block, axis=1)
        return g.concat([g.reshape(previous, shape4), g.reshape(t, shape4)], axis=2)

    def attend(_ln: str, q: str, k: str, v: str) -> str:
        keys = with_previous(k)
        values = with_previous(v)
        scores = g.op("MatMul", [g.reshape(q, shape4), g.transpose(keys, [0, 1, 3, 2])])
        scores = g.op("Where", [mask, g.op("Mul", [scores, scale]), g.const(-np.inf)])
        out = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), values])
        return g.reshape(out, [heads, -1, head_dim])

    y = mimi_transformer(g, x, w, ENCODER_TRANSFORMER, cfg, "enc_tr", cos, sin, attend)
    return g.op("Slice", [y, g.const([0], np.int64), n_real, g.const([1], np.int64)])


def build_mimi_encoder(w: Weights, cfg: MimiConfig) -> onnx.ModelProto:
    """24 kHz audio ``[1, samples]`` -> conditioning ``[frames, d_model]``."""
    g = GraphBuilder("mimi_encoder")
    proj = w[SPEAKER_PROJ]
    audio = g.input("audio", np.float32, [1, "samples"])
    x = _pad_to_multiple(g, audio, axis=1, rank=2, multiple=cfg.samples_per_frame)
    x = g.unsqueeze(x, [1])  # [1, 1, S]
    x = _seanet_encoder(g, x, w, cfg.seanet)  # [1, C, T] at 200 Hz
    x = _blocked_transformer(g, g.transpose(x, [0, 2, 1]), w, cfg.transformer)
    x = g.transpose(x, [0, 2, 1])
    if f"{DOWNSAMPLE}.weight" in w:
        x = _causal_conv(
            g, x, w, DOWNSAMPLE, "downsample", stride=cfg.upsample_stride, pad_mode="replicate"
        )  # [1, inner, frames]
    latents = g.reshape(g.transpose(x, [0, 2, 1]), [-1, proj.shape[1]])
    conditioning = g.linear(latents, proj, None, "speaker_proj")
    g.output(conditioning, "conditioning", np.float32, ["frames", proj.shape[0]])
    return g.model()


def encoder_weight_keys(w: Weights) -> list[str]:
    """The checkpoint tensors the encoder graph reads (present in this checkpoint)."""
    prefixes = (SEANET_ENCODER + ".", ENCODER_TRANSFORMER + ".", DOWNSAMPLE + ".")
    return sorted(k for k in w if k.startswith(prefixes) or k == SPEAKER_PROJ)
