"""Loading voice files of any published format, and saving the two we write.

Reading: the format comes from the content (see ``formats``): Kyutai voice
states (F32/BF16/F16), Kyutai's ``audio_prompt`` embeddings, the web demos'
voices.bin and PTVB1 containers, ``.npy`` arrays and FluidAudio's raw
``.bin``. Conditioning formats are prefilled (``bos_before_voice`` + the
frames) through the loaded model.

Writing, chosen by extension:

- ``.safetensors``: Kyutai's voice state (the FlowLM KV cache; what
  ``pocket-tts export-voice`` writes). Loads in pocket-tts and back.
- ``.bin``: FluidAudio's cloned voice: raw little-endian float32
  ``[frames, d_model]`` conditioning, row-major, no header, at most 125 frames
  (10 s, the size of FluidAudio's fixed encoder input).

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
from pocketcli.voices.formats import (
    BIN_MAX_FRAMES,
    identify,
    read_conditioning,
    read_conditioning_bin,
    read_state,
)
from pocketcli.voices.prompt import default_warn
from pocketcli.voices.state import VoiceError, VoiceState, ignored_notice, save_voice_state

if TYPE_CHECKING:
    from pocketcli.voices.cloning import VoiceRuntime

VOICE_SUFFIXES = (".safetensors", ".bin")
__all__ = [
    "BIN_MAX_FRAMES",
    "check_voice_suffix",
    "load_voice_file",
    "read_conditioning_bin",
    "save_voice_file",
    "write_conditioning_bin",
]


def check_voice_suffix(path: str | Path) -> str:
    """The format of a voice file path, or a VoiceError naming the accepted extensions."""
    suffix = Path(path).suffix.lower()
    if suffix not in VOICE_SUFFIXES:
        raise VoiceError(
            f"{path}: unknown voice file type {suffix or '(no extension)'!r};"
            " use .safetensors (Kyutai voice state) or .bin (FluidAudio)"
        )
    return suffix


def load_voice_file(
    path: str | Path,
    runtime: VoiceRuntime,
    name: str | None = None,
    on_notice: Callable[[str], None] | None = None,
) -> VoiceState:
    """Reads any voice format (found from the content) and checks it fits ``runtime``'s model.

    ``name`` picks a voice in a container (voices.bin, PTVB1); a file holding
    several voices needs one, and a wrong one lists the names. Conditioning
    voices are prefilled through the model, like a cloned voice. Notices
    (tensors ignored next to the known ones) go to ``on_notice``.
    """
    vf = identify(path)
    entry = vf.pick(name)
    t = runtime.config.flow_lm.transformer
    if entry.kind == "conditioning":
        if vf.ignored and on_notice is not None:
            on_notice(ignored_notice(vf.path, vf.ignored))
        return voice_from_conditioning(runtime, read_conditioning(vf, entry, t.d_model))
    voice = read_state(vf, entry, on_notice)
    try:
        voice.check_fits(t.num_layers, t.kv_heads, t.head_dim)
    except VoiceError as exc:
        raise VoiceError(f"{vf.path}: {exc}") from None
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
