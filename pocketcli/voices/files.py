"""Voice files in the two formats users carry between tools, chosen by extension.

- ``.safetensors``: Kyutai's voice state (the FlowLM KV cache; what
  ``pocket-tts export-voice`` writes). Loads in pocket-tts and back.
- ``.bin``: FluidAudio's cloned voice: raw little-endian float32
  ``[frames, d_model]`` conditioning, row-major, no header, at most 125 frames
  (10 s, the size of FluidAudio's fixed encoder input). Loading it prefills
  ``bos_before_voice`` + the frames, so it needs the loaded model.

Both are written atomically and every file read is checked (size, shape,
dtype, finiteness, fit to the loaded model) before it is used.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from pocketcli.atomic import atomic_path
from pocketcli.voices.cloning import voice_from_conditioning
from pocketcli.voices.prompt import default_warn
from pocketcli.voices.state import VoiceError, VoiceState, load_voice_state, save_voice_state

if TYPE_CHECKING:
    from pocketcli.runtimes.base import Runtime

VOICE_SUFFIXES = (".safetensors", ".bin")
BIN_MAX_FRAMES = 125


def check_voice_suffix(path: str | Path) -> str:
    """The format of a voice file path, or a VoiceError naming the accepted extensions."""
    suffix = Path(path).suffix.lower()
    if suffix not in VOICE_SUFFIXES:
        raise VoiceError(
            f"{path}: unknown voice file type {suffix or '(no extension)'!r};"
            " use .safetensors (Kyutai voice state) or .bin (FluidAudio)"
        )
    return suffix


def load_voice_file(path: str | Path, runtime: Runtime) -> VoiceState:
    """Reads either format and checks it fits the model ``runtime`` runs.

    ``.bin`` is FluidAudio's; any other name is read as a Kyutai voice state
    (whose reader says so plainly when the file is not one).
    """
    path = Path(path)
    if not path.is_file():
        raise VoiceError(f"voice file not found: {path}")
    t = runtime.config.flow_lm.transformer
    if path.suffix.lower() == ".bin":
        return voice_from_conditioning(runtime, read_conditioning_bin(path, t.d_model))
    voice = load_voice_state(path)
    try:
        voice.check_fits(t.num_layers, t.kv_heads, t.head_dim)
    except VoiceError as exc:
        raise VoiceError(f"{path}: {exc}") from None
    return voice


def save_voice_file(
    voice: VoiceState, path: str | Path, on_warning: Callable[[str], None] | None = None
) -> None:
    """Writes ``voice`` in the format of ``path``'s extension, atomically.

    ``.bin`` needs the voice's conditioning (a cloned voice, or one read from
    ``.bin``); longer than 125 frames it is cut to its first 125, with a warning.
    """
    if check_voice_suffix(path) == ".safetensors":
        save_voice_state(voice, path)
        return
    if voice.conditioning is None:
        raise VoiceError(
            f"{path}: a .bin voice holds the cloning conditioning, which this"
            " voice does not have (it was read from a voice state); save it as"
            " .safetensors, or clone it again from audio"
        )
    write_conditioning_bin(voice.conditioning, path, on_warning)


def read_conditioning_bin(path: str | Path, d_model: int) -> np.ndarray:
    """FluidAudio's ``.bin``: float32 LE ``[frames, d_model]``, 0 < frames <= 125."""
    path = Path(path)
    if not path.is_file():
        raise VoiceError(f"voice file not found: {path}")
    size = path.stat().st_size
    row = d_model * 4
    if size == 0 or size % row:
        raise VoiceError(
            f"{path}: invalid voice file size {size} bytes: a .bin voice is a"
            f" whole number of {d_model}-float frames ({row} bytes each)"
            " for this model"
        )
    frames = size // row
    if frames > BIN_MAX_FRAMES:
        raise VoiceError(f"{path}: voice file too large: {frames} frames, at most {BIN_MAX_FRAMES}")
    data = np.fromfile(path, dtype="<f4", count=frames * d_model)
    if data.size != frames * d_model:
        raise VoiceError(f"{path}: could not read {frames * d_model} floats")
    cond = data.astype(np.float32).reshape(frames, d_model)
    if not np.isfinite(cond).all():
        raise VoiceError(f"{path}: the voice holds NaN or infinite values")
    return cond


def write_conditioning_bin(
    conditioning: np.ndarray, path: str | Path, on_warning: Callable[[str], None] | None = None
) -> int:
    """Writes at most 125 frames atomically; returns how many were written."""
    cond = np.asarray(conditioning, np.float32)
    if cond.ndim != 2 or cond.shape[0] == 0:
        raise VoiceError(f"conditioning must be [frames, d_model], got {list(cond.shape)}")
    if cond.shape[0] > BIN_MAX_FRAMES:
        warn = on_warning or default_warn
        warn(
            f"{path}: FluidAudio .bin voices hold at most {BIN_MAX_FRAMES} frames (10 s);"
            f" kept the first {BIN_MAX_FRAMES} of {cond.shape[0]}"
        )
        cond = cond[:BIN_MAX_FRAMES]
    with atomic_path(path) as tmp:
        np.ascontiguousarray(cond, "<f4").tofile(tmp)
    return int(cond.shape[0])
