"""The numbers of a model config, checked before anything is made of them.

A config (a YAML of ours or Kyutai's, ``pack.json``'s copy, a bundle's sidecar, a browser
pack's ``pocket_tts.json``) is a file a user hands over: each number sizes graphs, caches
and states, so each is checked for its type and against a maximum before any allocation.
The maxima are about four times the largest published model's value (README, "Bounds and
their settings"), so a model a few times larger still loads and a typo or a hostile file
(``num_layers: 1000000000``) is one line naming the field.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pocketcli.errors import ConfigError

# field -> (least, most); "number" fields may be whole or not, the rest must be whole.
_FLOW_TRANSFORMER = {
    "d_model": (1, 4096),  # published: 1024
    "num_heads": (1, 64),  # 16
    "num_layers": (1, 96),  # 24
    "hidden_scale": (1, 16),  # 4
    "attn_dim": (1, 4096),  # 512
    "num_kv_heads": (1, 64),  # 2
    "dim_feedforward": (1, 16384),  # 96
}
_FLOW_HEAD = {"dim": (1, 4096), "depth": (1, 64)}  # 512, 6
_LOOKUP = {"dim": (1, 4096), "n_bins": (1, 1 << 20), "rank": (1, 4096)}  # 1024, 4000, 64
_SEANET = {
    "dimension": (1, 4096),  # 512
    "channels": (1, 8),  # 1
    "n_filters": (1, 1024),  # 64
    "n_residual_layers": (0, 16),  # 1
    "kernel_size": (1, 64),  # 7
    "residual_kernel_size": (1, 64),  # 3
    "last_kernel_size": (1, 64),  # 3
    "dilation_base": (1, 16),  # 2
    "compress": (1, 16),  # 2
}
_SEANET_RATIO = (1, 64)  # 6 (at most 16 ratios)
_MIMI_TRANSFORMER = {
    "d_model": (1, 4096),  # 512
    "input_dimension": (1, 4096),  # 512
    "num_heads": (1, 64),  # 8
    "num_layers": (1, 96),  # 12
    "context": (1, 1 << 16),  # 250
    "dim_feedforward": (1, 16384),  # 2048
}
_MIMI_OUTPUT = (1, 4096)  # 512 (at most 8 outputs)
_MIMI = {"sample_rate": (8000, 192000), "inner_dim": (1, 4096), "outer_dim": (1, 4096)}
_QUANTIZER = {"dimension": (1, 1024), "output_dimension": (1, 4096)}  # 32, 512
_TOP = {"z_dim": (1, 4096)}  # 64
_NUMBERS = {
    "max_period": (1.0, 1e9),
    "frame_rate": (1.0, 1000.0),  # 12.5
    "layer_scale": (-1e3, 1e3),
    "default_temperature": (0.0, 10.0),
    "default_eos_threshold": (-1e3, 1e3),
}
MAX_SAMPLES_PER_FRAME = 48000  # published: 1920 (24 kHz at 12.5 Hz)
MAX_LIST = {"ratios": 16, "output_dimensions": 8}


def _fail(field: str, value: Any, why: str) -> ConfigError:
    return ConfigError(f"{field} is {repr(value)[:40]}: {why}")


def whole(field: str, value: Any, least: int, most: int) -> int:
    """``value`` as a whole number from ``least`` to ``most``, else ``ConfigError``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(field, value, f"it must be a whole number from {least} to {most}")
    if not least <= value <= most:
        raise _fail(field, value, f"it must be from {least} to {most}")
    return value


def number(field: str, value: Any, least: float, most: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise _fail(field, value, f"it must be a number from {least:g} to {most:g}")
    if not least <= value <= most:
        raise _fail(field, value, f"it must be from {least:g} to {most:g}")
    return float(value)


def _section(d: Any, where: str, wholes: Mapping[str, tuple[int, int]]) -> None:
    if d is None:
        return
    if not isinstance(d, Mapping):
        raise ConfigError(f"{where} must be a mapping, not {type(d).__name__}")
    for key, value in d.items():
        field = f"{where}.{key}" if where else str(key)
        if value is None:
            continue
        if key in wholes:
            whole(field, value, *wholes[key])
        elif key in _NUMBERS:
            number(field, value, *_NUMBERS[key])
        elif key in MAX_LIST:
            _list(field, value, MAX_LIST[key], _SEANET_RATIO if key == "ratios" else _MIMI_OUTPUT)


def _list(field: str, value: Any, longest: int, bounds: tuple[int, int]) -> None:
    if not isinstance(value, list) or not 1 <= len(value) <= longest:
        raise _fail(field, value, f"it must be a list of 1 to {longest} whole numbers")
    for i, item in enumerate(value):
        whole(f"{field}[{i}]", item, *bounds)


def _divides(field: str, part: Any, whole_: Any, what: str) -> None:
    if isinstance(part, int) and isinstance(whole_, int) and whole_ % part:
        raise ConfigError(f"{field} is {part}: it must divide {what} ({whole_})")


def check_numbers(d: Mapping[str, Any]) -> None:
    """Every number of a config dict in range and of its type (``ConfigError`` naming the
    field otherwise); entries that are missing are left to the parser to name."""
    _section(d, "", _TOP)
    if isinstance(d.get("flow_lm"), Mapping):
        _flow_lm(d["flow_lm"])
    if isinstance(d.get("mimi"), Mapping):
        _mimi(d["mimi"])


def _flow_lm(fl: Mapping[str, Any]) -> None:
    _section(fl, "flow_lm", _TOP)
    t = fl.get("transformer")
    _section(t, "flow_lm.transformer", _FLOW_TRANSFORMER)
    _section(fl.get("flow"), "flow_lm.flow", _FLOW_HEAD)
    _section(fl.get("lookup_table"), "flow_lm.lookup_table", _LOOKUP)
    if isinstance(t, Mapping):
        heads = t.get("num_heads")
        width = t.get("attn_dim") or t.get("d_model")
        _divides("flow_lm.transformer.num_heads", heads, width, "the attention width")
        _divides("flow_lm.transformer.num_kv_heads", t.get("num_kv_heads"), heads, "num_heads")


def _mimi(m: Mapping[str, Any]) -> None:
    _section(m, "mimi", _MIMI)
    for key in ("seanet", "decoder_seanet"):
        _section(m.get(key), f"mimi.{key}", _SEANET)
    for key in ("transformer", "decoder_transformer"):
        tr = m.get(key)
        _section(tr, f"mimi.{key}", _MIMI_TRANSFORMER)
        if isinstance(tr, Mapping):
            _divides(f"mimi.{key}.num_heads", tr.get("num_heads"), tr.get("d_model"), "d_model")
    _section(m.get("quantizer"), "mimi.quantizer", _QUANTIZER)
    rate, frames = m.get("sample_rate"), m.get("frame_rate")  # both checked above
    if rate is not None and frames is not None and rate / frames > MAX_SAMPLES_PER_FRAME:
        raise ConfigError(
            f"mimi.frame_rate is {frames}: {rate} / {frames} samples per frame is more"
            f" than {MAX_SAMPLES_PER_FRAME}"
        )
