"""``bundle.json`` (schema version 2) of a KevinAHM v2 bundle: written and read.

The file holds the model's text-preparation flags and the manifests of the two
stateful graphs' states (flow_lm_main, mimi_decoder). KevinAHM's exporter builds
the manifests from PyTorch's initial state dicts; here they follow from the
model config alone, in the same order (module names sorted as strings, then
the keys within a module) with the same shapes and fills, and the file is
serialised as that exporter does (sorted keys, indent 2, trailing newline), so
for a published bundle's checkpoint the bytes are the published ones.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pocketcli import defaults
from pocketcli.config import MimiConfig, ModelConfig, SEANetConfig

# The files a reader needs to name, here rather than in ``export`` (which imports onnx,
# a second of CPU that opening a bundle must not pay).
SIDECAR_FILE = "pockettts.json"
SIDECAR_FORMAT = "pockettts-kevinahm-v2-config"


def graph_file(graph: str, precision: str) -> str:
    return f"{graph}.onnx" if precision == "fp32" else f"{graph}_{precision}.onnx"


BUNDLE_FILE = "bundle.json"
SCHEMA_VERSION = 2
BOS_FILE = "bos_before_voice.npy"
TOKENIZER_FILE = "tokenizer.model"
# The exporter's constants: positions of every attention cache, tokens per text chunk,
# and the voice names of its vendored pocket-tts (the same list for every language).
CACHE_POSITIONS = 1000
MAX_TOKENS_PER_CHUNK = defaults.MAX_TOKENS
PREDEFINED_VOICES = ("alba", "azelma", "cosette", "eponine", "fantine", "javert", "jean", "marius")
FILLS = ("nan", "zeros", "ones", "empty")
DTYPES = ("float32", "int64", "bool")
# Graph files per precision; cloning needs mimi_encoder.
GRAPHS = ("text_conditioner", "mimi_encoder", "flow_lm_main", "flow_lm_flow", "mimi_decoder")
REQUIRED_GRAPHS = ("text_conditioner", "flow_lm_main", "flow_lm_flow", "mimi_decoder")


@dataclass(frozen=True)
class StateEntry:
    """One entry of a state manifest: a graph input ``state_<index>`` and its output."""

    module: str
    key: str
    dtype: str
    shape: tuple[int, ...]
    fill: str
    index: int = 0

    @property
    def path(self) -> str:
        return f"{self.module}/{self.key}"

    @property
    def input_name(self) -> str:
        return f"state_{self.index}"

    @property
    def output_name(self) -> str:
        return f"out_state_{self.index}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "dtype": self.dtype,
            "fill": self.fill,
            "index": self.index,
            "input_name": self.input_name,
            "key": self.key,
            "module": self.module,
            "output_name": self.output_name,
            "path": self.path,
            "shape": list(self.shape),
        }


def _ordered(entries: list[StateEntry]) -> tuple[StateEntry, ...]:
    """Module names sorted as strings (layer 10 before layer 2), keys within a module."""
    ordered = sorted(entries, key=lambda e: (e.module, e.key))
    return tuple(
        StateEntry(e.module, e.key, e.dtype, e.shape, e.fill, i) for i, e in enumerate(ordered)
    )


def flow_lm_manifest(config: ModelConfig) -> tuple[StateEntry, ...]:
    t = config.flow_lm.transformer
    entries: list[StateEntry] = []
    for i in range(t.num_layers):
        module = f"transformer.layers.{i}.self_attn"
        shape = (2, 1, CACHE_POSITIONS, t.kv_heads, t.head_dim)
        entries += [
            StateEntry(module, "cache", "float32", shape, "nan"),
            StateEntry(module, "current_end", "float32", (0,), "empty"),
            StateEntry(module, "step", "int64", (1,), "zeros"),
        ]
    return _ordered(entries)


def _conv(module: str, c_in: int, kernel: int, stride: int = 1, dilation: int = 1) -> list:
    context = (kernel - 1) * dilation + 1 - stride
    return [
        StateEntry(module, "first", "bool", (1,), "ones"),
        StateEntry(
            module, "previous", "float32", (1, c_in, context), "zeros" if context else "empty"
        ),
    ]


def _conv_transpose(module: str, c_out: int, kernel: int, stride: int) -> list:
    return [StateEntry(module, "partial", "float32", (1, c_out, kernel - stride), "zeros")]


def _seanet_encoder(cfg: SEANetConfig) -> list[StateEntry]:
    p = "encoder.model"
    out = _conv(f"{p}.0", cfg.channels, cfg.kernel_size)
    channels, idx = cfg.n_filters, 1
    for ratio in reversed(cfg.ratios):
        for j in range(cfg.n_residual_layers):
            out += _conv(
                f"{p}.{idx}.block.1", channels, cfg.residual_kernel_size, 1, cfg.dilation_base**j
            )
            out += _conv(f"{p}.{idx}.block.3", channels // cfg.compress, 1)
            idx += 1
        idx += 1  # the ELU
        out += _conv(f"{p}.{idx}", channels, 2 * ratio, ratio)
        channels *= 2
        idx += 1
    idx += 1
    return out + _conv(f"{p}.{idx}", channels, cfg.last_kernel_size)


def _seanet_decoder(cfg: SEANetConfig) -> list[StateEntry]:
    p = "decoder.model"
    channels = cfg.n_filters * 2 ** len(cfg.ratios)
    out = _conv(f"{p}.0", cfg.dimension, cfg.kernel_size)
    idx = 1
    for ratio in cfg.ratios:
        idx += 1  # the ELU
        out += _conv_transpose(f"{p}.{idx}", channels // 2, 2 * ratio, ratio)
        channels //= 2
        idx += 1
        for j in range(cfg.n_residual_layers):
            out += _conv(
                f"{p}.{idx}.block.1", channels, cfg.residual_kernel_size, 1, cfg.dilation_base**j
            )
            out += _conv(f"{p}.{idx}.block.3", channels // cfg.compress, 1)
            idx += 1
    idx += 1
    return out + _conv(f"{p}.{idx}", channels, cfg.last_kernel_size)


def mimi_attention_modules(cfg: MimiConfig) -> list[tuple[str, int, int]]:
    """(module, heads, head_dim) of every Mimi attention layer, encoder side first."""
    out = []
    for side, t in (("encoder", cfg.transformer), ("decoder", cfg.decoder_transformer)):
        for i in range(t.num_layers):
            module = f"{side}_transformer.transformer.layers.{i}.self_attn"
            out.append((module, t.num_heads, t.d_model // t.num_heads))
    return out


def mimi_manifest(cfg: MimiConfig) -> tuple[StateEntry, ...]:
    """Every stateful Mimi module, the encoder side's too (dead inputs of the decoder)."""
    stride = cfg.upsample_stride
    entries = _seanet_encoder(cfg.seanet) + _seanet_decoder(cfg.decoder_seanet)
    if stride > 1:
        entries += _conv("downsample.conv", cfg.seanet.dimension, 2 * stride, stride)
        entries += _conv_transpose(
            "upsample.convtr", cfg.decoder_seanet.dimension, 2 * stride, stride
        )
    for module, heads, head_dim in mimi_attention_modules(cfg):
        entries += [
            StateEntry(
                module, "cache", "float32", (2, 1, heads, CACHE_POSITIONS, head_dim), "zeros"
            ),
            StateEntry(module, "end_offset", "int64", (1,), "zeros"),
            StateEntry(module, "offset", "int64", (1,), "zeros"),
        ]
    return _ordered(entries)


def bundle_metadata(
    config: ModelConfig, bundle_name: str, tokenizer_file: str = TOKENIZER_FILE
) -> dict:
    """The content of ``bundle.json`` for a model (``bundle_name`` is also its language)."""
    text = config.text
    frames_after_eos = text.get("model_recommended_frames_after_eos")
    bos = config.flow_lm.insert_bos_before_voice
    return {
        "schema_version": SCHEMA_VERSION,
        "bundle_name": bundle_name,
        "language": bundle_name,
        "sample_rate": config.mimi.sample_rate,
        "frame_rate": float(config.mimi.frame_rate),
        "samples_per_frame": int(round(config.mimi.sample_rate / config.mimi.frame_rate)),
        "latent_dim": config.flow_lm.latent_dim,
        "conditioning_dim": config.flow_lm.transformer.d_model,
        "pad_with_spaces_for_short_inputs": bool(
            text.get("pad_with_spaces_for_short_inputs", False)
        ),
        "remove_semicolons": bool(text.get("remove_semicolons", False)),
        "model_recommended_frames_after_eos": (
            None if frames_after_eos is None else int(frames_after_eos)
        ),
        "max_token_per_chunk": MAX_TOKENS_PER_CHUNK,
        "insert_bos_before_voice": bos,
        "tokenizer_file": tokenizer_file,
        "bos_before_voice_file": BOS_FILE if bos else None,
        "predefined_voices": list(PREDEFINED_VOICES),
        "flow_lm_state_manifest": [e.to_dict() for e in flow_lm_manifest(config)],
        "mimi_state_manifest": [e.to_dict() for e in mimi_manifest(config.mimi)],
    }


def bundle_json(metadata: dict) -> bytes:
    """Serialised as KevinAHM's exporter writes it."""
    return (json.dumps(metadata, indent=2, sort_keys=True) + "\n").encode("utf-8")


def write_bundle_json(directory: Path, metadata: dict) -> None:
    (directory / BUNDLE_FILE).write_bytes(bundle_json(metadata))
