"""Does a checkpoint carry working voice-cloning weights?

Kyutai publishes each model twice: ``kyutai/pocket-tts`` (gated: accept the
terms on Hugging Face) and ``kyutai/pocket-tts-without-voice-cloning``.
pocket-tts 4.0.1 loads either file with ``load_state_dict(strict=True)``
(``TTSModel._from_pydantic_config_with_weights``), so the second one has
every key of the first; only ``has_voice_cloning = False`` remembers which
was loaded. What differs is the content: the Mimi encoder tensors of the
public file are zeros (reported by projects converting it, e.g. the 42
``mimi.encoder*`` tensors of English), so its encoder maps every prompt to
the same conditioning. We cannot download either file here, so the test is
on content: any encoder part missing or all zero means no cloning, and so
does a zero ``speaker_proj_weight`` (what pocket-tts itself initialises it
to before loading).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pocketcli.config import MimiConfig, ModelConfig
from pocketcli.packs.checkpoint import CheckpointError, Weights
from pocketcli.packs.mimi_encoder_graph import (
    DOWNSAMPLE,
    ENCODER_TRANSFORMER,
    SEANET_ENCODER,
    SPEAKER_PROJ,
)


@dataclass(frozen=True)
class CloningSupport:
    available: bool
    reason: str = ""  # why not, for the manifest and the user's message


def encoder_shapes(cfg: ModelConfig) -> dict[str, tuple[tuple[int, ...], str]]:
    """Each encoder-side tensor -> (shape, group) as pocket-tts builds it from the config."""
    m: MimiConfig = cfg.mimi
    s = m.seanet
    shapes: dict[str, tuple[tuple[int, ...], str]] = {}

    def conv(prefix: str, c_out: int, c_in: int, k: int) -> None:
        shapes[f"{prefix}.conv.weight"] = ((c_out, c_in, k), "SEANet encoder")
        shapes[f"{prefix}.conv.bias"] = ((c_out,), "SEANet encoder")

    p = SEANET_ENCODER
    conv(f"{p}.0", s.n_filters, s.channels, s.kernel_size)
    idx, mult = 1, 1
    for ratio in reversed(s.ratios):
        width = mult * s.n_filters
        for _ in range(s.n_residual_layers):
            conv(f"{p}.{idx}.block.1", width // s.compress, width, s.residual_kernel_size)
            conv(f"{p}.{idx}.block.3", width, width // s.compress, 1)
            idx += 1
        conv(f"{p}.{idx + 1}", 2 * width, width, 2 * ratio)
        idx += 2
        mult *= 2
    conv(f"{p}.{idx + 1}", s.dimension, mult * s.n_filters, s.last_kernel_size)

    t = m.transformer
    d, group = t.d_model, "encoder transformer"
    if t.input_dimension != d:
        shapes[f"{ENCODER_TRANSFORMER}.input_proj.weight"] = ((d, t.input_dimension), group)
    for i in range(t.num_layers):
        lp = f"{ENCODER_TRANSFORMER}.transformer.layers.{i}"
        shapes[f"{lp}.self_attn.in_proj.weight"] = ((3 * d, d), group)
        shapes[f"{lp}.self_attn.out_proj.weight"] = ((d, d), group)
        shapes[f"{lp}.linear1.weight"] = ((t.dim_feedforward, d), group)
        shapes[f"{lp}.linear2.weight"] = ((d, t.dim_feedforward), group)
        for norm in ("norm1", "norm2"):
            shapes[f"{lp}.{norm}.weight"] = ((d,), group)
            shapes[f"{lp}.{norm}.bias"] = ((d,), group)
        for scale in ("layer_scale_1", "layer_scale_2"):
            shapes[f"{lp}.{scale}.scale"] = ((d,), group)
    for out_dim in t.output_dimensions[:1]:
        if out_dim != d:
            shapes[f"{ENCODER_TRANSFORMER}.output_projs.0.weight"] = ((out_dim, d), group)

    inner = m.inner_dim or s.dimension
    if m.upsample_stride > 1:
        shapes[f"{DOWNSAMPLE}.weight"] = (
            (inner, s.dimension, 2 * m.upsample_stride),
            "downsampler",
        )
    shapes[SPEAKER_PROJ] = ((cfg.flow_lm.transformer.d_model, inner), "speaker projection")
    return shapes


def cloning_support(weights: Weights, cfg: ModelConfig) -> CloningSupport:
    """Whether the encoder graph can be built from ``weights`` and would do anything.

    A tensor present with the wrong shape is a broken checkpoint and raises;
    missing or zeroed parts are the "without voice cloning" release.
    """
    shapes = encoder_shapes(cfg)
    missing = [k for k in shapes if k not in weights]
    if missing:
        groups = sorted({shapes[k][1] for k in missing})
        return CloningSupport(
            False,
            f"the checkpoint has no {' / '.join(groups)} weights"
            f" ({len(missing)} tensors missing, e.g. {missing[0]})",
        )
    for key, (shape, _) in shapes.items():
        if tuple(weights[key].shape) != shape:
            raise CheckpointError(
                f"{key} has shape {list(weights[key].shape)}, the config implies {list(shape)}"
            )
    zero_groups = []
    for group in dict.fromkeys(g for _, g in shapes.values()):
        # The convolution and projection matrices: norms and biases may keep their values.
        keys = [k for k, (shape, g) in shapes.items() if g == group and len(shape) >= 2]
        if not any(np.any(weights[k]) for k in keys):
            zero_groups.append(group)
    if zero_groups:
        return CloningSupport(
            False,
            f"the checkpoint's {' and '.join(zero_groups)} weights are"
            ' all zero (Kyutai\'s "without voice cloning" release)',
        )
    return CloningSupport(True)
