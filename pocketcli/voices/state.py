"""Voice states: the FlowLM KV cache after a voice prompt, in Kyutai's file format.

``pocket-tts export-voice`` writes one safetensors file with, per attention
layer ``transformer.layers.<i>.self_attn``: ``/cache`` float32
``[2, 1, T, kv_heads, head_dim]`` (keys after RoPE, then values), ``/offset``
int64 ``[1]`` and ``/pad`` int64 ``[1]``. We write exactly that, and read it
with caches in F32, BF16 or F16 (upcast exactly), so voices move between
pockettts and Kyutai's tools in both directions.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

from pocketcli.atomic import atomic_path
from pocketcli.errors import VoiceError as VoiceError  # defined there; re-exported
from pocketcli.filekind import require_regular
from pocketcli.tensorfile import TensorFile, TensorFileError

STATE_KEY = re.compile(r"^transformer\.layers\.(\d+)\.self_attn/(cache|offset|pad|current_end)$")
MAX_VOICE_FILE_BYTES = 1 << 30


@dataclass(frozen=True)
class VoiceState:
    """Per-layer keys and values ``[T, kv_heads, head_dim]`` for T prompt positions.

    ``conditioning`` is the ``[frames, d_model]`` encoder output the state was
    prefilled from (without ``bos_before_voice``), kept when the voice was
    cloned or read from a FluidAudio ``.bin``, so it can be saved as ``.bin``
    again. A state read from ``.safetensors`` has none: that format stores
    only the cache.
    """

    keys: tuple[np.ndarray, ...]
    values: tuple[np.ndarray, ...]
    conditioning: np.ndarray | None = field(default=None, compare=False, repr=False)

    def __repr__(self) -> str:
        """Short: the shape, never the cache's numbers (megabytes of them)."""
        shape = "x".join(map(str, self.keys[0].shape[1:])) if self.keys else "-"
        cond = self.conditioning
        frames = "" if cond is None else f", conditioning={cond.shape[0]} frames"
        return (
            f"VoiceState(positions={self.length}, layers={self.num_layers},"
            f" heads x head_dim={shape}{frames})"
        )

    @property
    def length(self) -> int:
        return int(self.keys[0].shape[0]) if self.keys else 0

    @property
    def num_layers(self) -> int:
        return len(self.keys)

    def check_fits(self, num_layers: int, kv_heads: int, head_dim: int) -> None:
        if self.num_layers != num_layers:
            raise VoiceError(
                f"voice state has {self.num_layers} layers but the model has {num_layers}"
                " (was it made for another model size?)"
            )
        want = (kv_heads, head_dim)
        got = tuple(self.keys[0].shape[1:])
        if got != want:
            raise VoiceError(
                f"voice state has heads x head_dim {list(got)}, the model needs {list(want)}"
            )


def ignored_notice(path: str | Path, names: list[str] | tuple[str, ...]) -> str:
    shown = ", ".join(names[:5]) + (" ..." if len(names) > 5 else "")
    return f"{path}: ignored {len(names)} tensor(s) that are no part of a voice: {shown}"


def load_voice_state(
    path: str | Path, on_notice: Callable[[str], None] | None = None
) -> VoiceState:
    """A Kyutai voice state (safetensors); caches in F32, BF16 or F16 come back float32.

    Tensors with other names than a voice state's are ignored, and reported to
    ``on_notice`` when given.
    """
    path = Path(path)
    if not path.is_file():
        require_regular(path, "voice file", VoiceError)  # says why: a folder, a link loop...
    if path.stat().st_size > MAX_VOICE_FILE_BYTES:
        raise VoiceError(f"{path} is too large to be a voice state")
    try:
        with TensorFile(path) as f:
            ignored = [k for k in f.tensors if not STATE_KEY.match(k)]
            tensors = {k: f.read(k) for k in f.tensors if STATE_KEY.match(k)}
    except TensorFileError as exc:
        raise VoiceError(str(exc)) from None
    if not tensors:
        shown = ", ".join(ignored[:3]) + (" ..." if len(ignored) > 3 else "")
        raise VoiceError(
            f"{path}: no Kyutai voice-state tensor in it (it holds: {shown or 'none'})"
        )
    if ignored and on_notice is not None:
        on_notice(ignored_notice(path, ignored))
    return state_from_tensors(tensors, path)


def state_from_tensors(tensors: dict[str, np.ndarray], path: str | Path) -> VoiceState:
    """Kyutai's per-layer ``cache``/``offset``/``pad`` (or legacy ``current_end``) tensors,
    every one checked, to a VoiceState."""
    layers: dict[int, dict[str, np.ndarray]] = {}
    for key, value in tensors.items():
        m = STATE_KEY.match(key)
        if m is None:  # pragma: no cover - callers pass voice-state keys only
            raise VoiceError(f"{path}: unexpected tensor {key!r} in a voice state")
        layers.setdefault(int(m.group(1)), {})[m.group(2)] = value
    if not layers or sorted(layers) != list(range(len(layers))):
        raise VoiceError(f"{path}: layers must be numbered 0..N-1, found {sorted(layers)}")
    keys, values = [], []
    for i in range(len(layers)):
        entry = layers[i]
        cache = entry.get("cache")
        if cache is None:
            raise VoiceError(f"{path}: layer {i} has no cache")
        if cache.ndim != 5 or cache.shape[0] != 2 or cache.shape[1] != 1:
            raise VoiceError(
                f"{path}: layer {i} cache has shape {list(cache.shape)},"
                " expected [2, 1, T, heads, head_dim]"
            )
        if not np.issubdtype(cache.dtype, np.floating):
            raise VoiceError(
                f"{path}: layer {i} cache has dtype {cache.dtype}, expected F32, BF16 or F16"
            )
        if "offset" in entry:
            offset = _scalar_int(entry["offset"], f"{path}: layer {i} offset")
        elif "current_end" in entry:
            offset = int(entry["current_end"].shape[0])
        else:
            raise VoiceError(f"{path}: layer {i} has no offset")
        pad = _scalar_int(entry.get("pad", np.zeros(1, np.int64)), f"{path}: layer {i} pad")
        if pad != 0:
            raise VoiceError(
                f"{path}: layer {i} has left padding {pad}; batched states are not supported"
            )
        if not 0 < offset <= cache.shape[2]:
            raise VoiceError(
                f"{path}: layer {i} offset {offset} outside its cache of {cache.shape[2]} positions"
            )
        valid = cache[:, 0, :offset].astype(np.float32)
        if not np.isfinite(valid).all():
            raise VoiceError(f"{path}: layer {i} holds NaN or infinite values")
        keys.append(np.ascontiguousarray(valid[0]))
        values.append(np.ascontiguousarray(valid[1]))
    lengths = {k.shape[0] for k in keys}
    shapes = {k.shape[1:] for k in keys}
    if len(lengths) != 1 or len(shapes) != 1:
        raise VoiceError(f"{path}: layers disagree on length or shape")
    return VoiceState(tuple(keys), tuple(values))


def _scalar_int(value: np.ndarray, what: str) -> int:
    a = np.asarray(value)
    if a.size != 1 or not (np.issubdtype(a.dtype, np.integer) or a.dtype == np.bool_):
        raise VoiceError(f"{what} must be one integer, got {a.dtype} {list(a.shape)}")
    return int(a.reshape(-1)[0])


def save_voice_state(state: VoiceState, path: str | Path) -> None:
    """Writes Kyutai's layout atomically (temporary file in the same folder, then rename)."""
    path = Path(path)
    tensors: dict[str, np.ndarray] = {}
    for i, (k, v) in enumerate(zip(state.keys, state.values, strict=True)):
        prefix = f"transformer.layers.{i}.self_attn"
        tensors[f"{prefix}/cache"] = np.ascontiguousarray(np.stack([k, v])[:, None])
        tensors[f"{prefix}/offset"] = np.array([k.shape[0]], np.int64)
        tensors[f"{prefix}/pad"] = np.zeros(1, np.int64)
    with atomic_path(path) as tmp:
        save_file(tensors, str(tmp))
