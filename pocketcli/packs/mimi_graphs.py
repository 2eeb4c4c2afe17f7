"""ONNX graph of the streaming Mimi decoder (latents -> 24 kHz audio).

Activations are time-major (``[T, C]``) from the latents to the audio, so
every convolution is a MatMul over its taps and no transposes sit between
layers. Every piece of streaming memory is an explicit state tensor: the
left context of each causal convolution (``[context, C]``), the last input row
of each SEANet transposed convolution (``[1, C_in]``; packs built before
2026-12-03 carry its overlap ``[1, stride, C_out]`` instead, as the depthwise
upsampler still does), and a window of ``context`` keys/values per transformer
layer with the running position.
A call takes ``state.<name>`` inputs and returns ``state_out.<name>``;
feeding the outputs back in makes any split of the latents into calls give
the same audio.

The batched decoder (``mimi_decoder_batch``, the scheduler's) is the same
network on ``B`` streams at once: activations ``[B, T, C]``, every state
with a leading batch axis (row ``b`` is stream ``b``'s state, in the shape
the manifest gives), each row at its own transformer position. No op mixes
rows, so a stream's audio does not depend on the others in its call.
"""

from __future__ import annotations

import numpy as np
import onnx

from pocketcli.config import MimiConfig, MimiTransformerConfig, SEANetConfig
from pocketcli.packs.mimi_layers import Weights, conv_weight, elu, mimi_transformer
from pocketcli.packs.onnx_graph import GraphBuilder
from pocketcli.packs.rope import rope_tables
from pocketcli.packs.state_spec import StateSpec


class _StatefulGraph:
    """A GraphBuilder plus the list of state tensors it threads through.

    ``batched``: activations and states carry a leading batch axis; ``t`` is then
    the time axis 1 (else 0) and ``rows`` the leading dims a reshape keeps.
    ``overlap``: the upsamplers carry their overlap (packs built before 2026-12-03,
    and the kevinahm export, whose format has that state) instead of their last input row.
    """

    def __init__(self, g: GraphBuilder, batched: bool = False, overlap: bool = False) -> None:
        self.g = g
        self.states: list[StateSpec] = []
        self.batched = batched
        self.overlap = overlap
        self.t = 1 if batched else 0
        self.rows: list[int] = [0] if batched else []
        self._lead: list[int | str] = ["batch"] if batched else []

    def state(self, name: str, shape: tuple[int, ...], dtype: type = np.float32) -> str:
        dt = np.dtype(dtype)
        self.states.append(StateSpec(name, shape, dt.name))
        return self.g.input(f"state.{name}", dtype, [*self._lead, *shape])

    def update(self, name: str, value: str) -> None:
        spec = next(s for s in self.states if s.name == name)
        dtype = np.dtype(spec.dtype).type
        self.g.output(value, f"state_out.{name}", dtype, [*self._lead, *spec.shape])


_END = np.iinfo(np.int64).max


def _streaming_conv(
    sg: _StatefulGraph, x: str, w: Weights, prefix: str, name: str, dilation: int = 1
) -> str:
    """Causal conv on time-major ``x [T, C_in]`` (``[B, T, C_in]`` batched): one MatMul
    for all taps, then shift-add.

    The left context comes from the previous call (zeros at start). Every
    tap's weights side by side make one plain MatMul ``[context + T, C_in] x
    [C_in, k * C_out]`` (no transposes, quantisable like any weight MatMul);
    output row t then sums tap j's column block at row ``t + j * dilation``.
    Shifting the outputs rather than the inputs (im2col) moves k * C_out
    columns instead of k * C_in: half as much in the residual blocks, and a
    hundredth in the last conv (C_out = 1).
    """
    g, t = sg.g, sg.t
    weight, bias = conv_weight(w, prefix)  # [C_out, C_in, k]
    c_out, c_in, k = weight.shape
    context = (k - 1) * dilation
    if context > 0:
        prev = sg.state(name, (context, c_in))
        x = g.concat([prev, x], axis=t)  # [context + T, C_in]
        sg.update(name, g.slice(x, -context, _END, axis=t))
    matrix = weight.transpose(1, 2, 0).reshape(c_in, k * c_out)
    y = g.op("MatMul", [x, g.weight(f"{name}.weight", matrix)])
    if bias is not None:  # on tap 0's columns only: right after the MatMul, it fuses into it
        y = g.op("Add", [y, g.weight(f"{name}.bias", np.pad(bias, (0, (k - 1) * c_out)))])
    if k > 1:
        taps = g.reshape(y, [*sg.rows, -1, k, c_out])  # [context + T, k, C_out]
        y = None
        for j in range(k):
            row_end = (j * dilation - context) or _END
            tap = g.op(
                "Slice",
                [
                    taps,
                    g.const([j * dilation, j], np.int64),
                    g.const([row_end, j + 1], np.int64),
                    g.const([t, t + 1], np.int64),
                ],
            )  # [T, 1, C_out]
            y = tap if y is None else g.op("Add", [y, tap])
        y = g.reshape(y, [*sg.rows, -1, c_out])
    return y


def _streaming_conv_transpose(
    sg: _StatefulGraph, x: str, w: Weights, prefix: str, name: str, stride: int, groups: int = 1
) -> str:
    """Transposed conv on time-major ``x [T, C_in]`` whose overlap is carried to the next call.

    With a kernel of at most twice the stride (every Mimi upsampler has exactly
    twice), output block t is ``A_t + B_{t-1}``, where A and B are the two
    kernel halves applied to input row t: one MatMul (a per-channel product
    when depthwise) and a shift, several times faster than ConvTranspose and
    quantisable. The overlap B of the last row is the state.
    """
    g, t = sg.g, sg.t
    weight, bias = conv_weight(w, prefix)  # [C_in, C_out / groups, k]
    c_in, k = weight.shape[0], weight.shape[2]
    c_out = weight.shape[1] * groups
    if k > 2 * stride or groups not in (1, c_in):
        raise ValueError(
            f"{prefix}: transposed conv with kernel {k}, stride {stride} and"
            f" {groups} groups is not supported"
        )
    weight = np.pad(weight, ((0, 0), (0, 0), (0, 2 * stride - k)))
    if groups == 1 and not sg.overlap:
        return _conv_transpose_rows(sg, x, weight, bias, name, stride)
    partial = sg.state(name, (1, stride, c_out))
    # The kernel's product with each input row, [T, 2s * C_out]: halves A then B.
    if groups == 1:
        product = g.op(
            "MatMul", [x, g.weight(f"{name}.weight", weight.transpose(0, 2, 1).reshape(c_in, -1))]
        )
    else:
        taps = np.ascontiguousarray(weight[:, 0, :].T)  # [2s, C]
        product = g.reshape(
            g.op("Mul", [g.unsqueeze(x, [t + 1]), g.weight(f"{name}.weight", taps)]),
            [*sg.rows, -1, 2 * stride * c_out],
        )
    if bias is not None:  # on the A half only, right after the product (fused into a MatMul)
        half = np.concatenate([np.tile(bias, (stride, 1)), np.zeros((stride, c_out))])
        product = g.op(
            "Add", [product, g.weight(f"{name}.bias", half.reshape(-1).astype(np.float32))]
        )
    blocks = g.reshape(product, [*sg.rows, -1, 2 * stride, c_out])  # [T, 2s, C_out]
    first, second = g.split(blocks, [stride, stride], axis=t + 1)  # A, B: [T, s, C_out]
    carried = g.concat([partial, second], axis=t)  # [T + 1, s, C_out]
    y = g.op("Add", [first, g.slice(carried, 0, -1, axis=t)])
    sg.update(name, g.slice(carried, -1, _END, axis=t))
    return g.reshape(y, [*sg.rows, -1, c_out])  # [T * s, C_out]


def _conv_transpose_rows(
    sg: _StatefulGraph, x: str, weight: np.ndarray, bias: np.ndarray | None, name: str, stride: int
) -> str:
    """A transposed conv (kernel ``[C_in, C_out, 2 * stride]``) as one MatMul over input row
    pairs: output block t is ``A x_t + B x_{t-1}``, so ``[x_{t-1}, x_t] [T, 2 C_in]`` times
    ``[B; A]`` gives the ``stride`` output rows of each block side by side (a free reshape
    to ``[T * stride, C_out]``). The state is the last input row ``[1, C_in]``. Every copy
    is of the input, which is ``2 * stride * C_out / C_in`` times smaller than the product
    the overlap form splits, shifts and adds (4x in the last upsampler).
    """
    g, t = sg.g, sg.t
    c_in, c_out = weight.shape[0], weight.shape[1]
    prev = sg.state(name, (1, c_in))
    rows = g.concat([prev, x], axis=t)  # [T + 1, C_in]
    sg.update(name, g.slice(rows, -1, _END, axis=t))
    pairs = g.concat([g.slice(rows, 0, -1, axis=t), x], axis=t + 1)  # [T, 2 C_in]
    halves = weight.transpose(2, 0, 1)  # [2s, C_in, C_out]
    matrix = np.concatenate(
        [halves[stride:].transpose(1, 0, 2), halves[:stride].transpose(1, 0, 2)]
    )  # [2 C_in, s, C_out]: B then A
    y = g.op("MatMul", [pairs, g.weight(f"{name}.weight", matrix.reshape(2 * c_in, -1))])
    if bias is not None:
        y = g.op("Add", [y, g.weight(f"{name}.bias", np.tile(bias, stride).astype(np.float32))])
    return g.reshape(y, [*sg.rows, -1, c_out])  # [T * s, C_out]


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
            h = _streaming_conv(
                sg, h, w, f"{block}.1.conv", f"dec.res{idx}.conv1", dilation=cfg.dilation_base**j
            )
            h = elu(sg.g, h)
            h = _streaming_conv(sg, h, w, f"{block}.3.conv", f"dec.res{idx}.conv2")
            x = sg.g.op("Add", [x, h])
            idx += 1
    x = elu(sg.g, x)
    idx += 1
    return _streaming_conv(sg, x, w, f"{p}.{idx}.conv", "dec.conv_out")


def _windowed_transformer(
    sg: _StatefulGraph, x: str, w: Weights, prefix: str, cfg: MimiTransformerConfig, name: str
) -> str:
    """Streaming transformer over ``x [1, T, d]`` with attention limited to ``context``.

    Each layer keeps the keys and values of the last ``context`` positions as
    state; new queries attend to that window plus the new keys. Batched: ``x
    [B, T, d]``, each row at its own position (state ``[B, 1]``), its own mask.
    """
    g, t = sg.g, sg.t
    heads, ctx = cfg.num_heads, cfg.context
    head_dim = cfg.d_model // heads
    position = sg.state(f"{name}.position", (1,), np.int64)  # [B, 1] batched
    n_new = g.shape_dim(x, 1)
    new_index = g.op("Range", [g.const(0, np.int64), g.squeeze(n_new, [0]), g.const(1, np.int64)])
    q_pos = g.op("Add", [new_index, position])  # absolute query positions ([B, T] batched)
    k_pos = g.concat(
        [
            g.op("Add", [g.const(np.arange(-ctx, 0), np.int64), position]),
            q_pos,
        ],
        axis=t,
    )  # window, then new keys
    delta = g.op("Sub", [g.unsqueeze(q_pos, [t + 1]), g.unsqueeze(k_pos, [t])])
    mask = g.op(
        "And",
        [
            g.op(
                "And",
                [
                    g.op("GreaterOrEqual", [g.unsqueeze(k_pos, [t]), g.const(0, np.int64)]),
                    g.op("GreaterOrEqual", [delta, g.const(0, np.int64)]),
                ],
            ),
            g.op("Less", [delta, g.const(ctx, np.int64)]),
        ],
    )  # [T, ctx + T]; batched [B, 1, T, ctx + T] (one mask per row, for every head)
    if sg.batched:
        mask = g.unsqueeze(mask, [1])
        q_pos = g.reshape(q_pos, [-1])  # RoPE tables for the B * T rows, row-major
    cos, sin = rope_tables(g, q_pos, head_dim, cfg.max_period)
    scale = g.const(1.0 / np.sqrt(head_dim))
    sg.update(f"{name}.position", g.op("Add", [position, n_new]))
    h = t + 1  # the time axis of [H, T, Dh] (batched [B, H, T, Dh])
    swap = [0, 1, 3, 2] if sg.batched else [0, 2, 1]

    def attend(ln: str, q: str, k: str, v: str) -> str:
        keys = g.concat([sg.state(f"{ln}.keys", (heads, ctx, head_dim)), k], axis=h)
        values = g.concat([sg.state(f"{ln}.values", (heads, ctx, head_dim)), v], axis=h)
        sg.update(f"{ln}.keys", g.slice(keys, -ctx, _END, axis=h))
        sg.update(f"{ln}.values", g.slice(values, -ctx, _END, axis=h))
        scores = g.op("Mul", [g.op("MatMul", [q, g.transpose(keys, swap)]), scale])
        scores = g.op("Where", [mask, scores, g.const(-np.inf)])
        return g.op("MatMul", [g.op("Softmax", [scores], axis=-1), values])  # [H, T, Dh]

    return mimi_transformer(g, x, w, prefix, cfg, name, cos, sin, attend, batched=sg.batched)


def build_mimi_decoder(
    w: Weights, cfg: MimiConfig, batched: bool = False, overlap_states: bool = False
) -> tuple[onnx.ModelProto, list[StateSpec]]:
    """Normalised latents ``[1, K, latent_dim]`` -> audio ``[1, K * samples_per_frame]``;
    ``batched``: ``[B, K, latent_dim]`` -> ``[B, K * samples_per_frame]`` (the states
    have the same names and row shapes, stacked along a leading batch axis).
    ``overlap_states``: the SEANet upsamplers in their form before 2026-12-03 (state:
    the overlap ``[1, stride, C_out]``), the same audio within float rounding."""
    g = GraphBuilder("mimi_decoder_batch" if batched else "mimi_decoder")
    sg = _StatefulGraph(g, batched, overlap_states)
    rows = "batch" if batched else 1
    latents = g.input("latents", np.float32, [rows, "frames", cfg.quantizer_dimension])
    x = g.op(
        "Add",
        [
            g.op("Mul", [latents, g.weight("emb_std", w["flow_lm.emb_std"])]),
            g.weight("emb_mean", w["flow_lm.emb_mean"]),
        ],
    )
    proj = w["mimi.quantizer.output_proj.weight"][:, :, 0]
    x = g.reshape(g.linear(x, proj, None, "quantizer.output_proj"), [*sg.rows, -1, proj.shape[0]])
    x = _streaming_conv_transpose(
        sg,
        x,
        w,
        "mimi.upsample.convtr.convtr",
        "upsample",
        stride=cfg.upsample_stride,
        groups=w["mimi.upsample.convtr.convtr.weight"].shape[0],
    )
    x = _windowed_transformer(
        sg,
        x if batched else g.unsqueeze(x, [0]),
        w,
        "mimi.decoder_transformer",
        cfg.decoder_transformer,
        "dec_tr",
    )
    audio = _seanet_decoder(sg, x if batched else g.squeeze(x, [0]), w, cfg.decoder_seanet)
    g.output(
        g.reshape(audio, [*sg.rows, -1] if batched else [1, -1]),
        "audio",
        np.float32,
        [rows, "samples"],
    )
    return g.model(), sg.states
