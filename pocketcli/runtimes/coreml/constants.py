"""A FluidAudio pack's ``constants_bin/``: embeddings, BOS rows, tokenizer, voices.

Every ``.bin`` is raw little-endian float32 without a header, so its size is
its only self-description: each file is checked against the size the model
implies before it is used (a truncated download must not become a silently
wrong voice). Rules as FluidAudio's ``PocketTtsConstantsLoader``: the
embedding table is any non-zero number of ``d_model`` rows, ``bos_emb`` is
exactly ``latent_dim`` floats, ``bos_before_voice`` (optional; needed for
cloned voices) exactly ``d_model``; a Mimi initial state file that does not
match its state's size is ignored (the state stays zero).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pocketcli.packs.manifest import PackError
from pocketcli.voices.state import VoiceError, VoiceState, load_voice_state

log = logging.getLogger(__name__)

CONSTANTS_DIR = "constants_bin"
TEXT_EMBED_TABLE = "text_embed_table.bin"
BOS_EMB = "bos_emb.bin"
BOS_BEFORE_VOICE = "bos_before_voice.bin"
SPEAKER_PROJ = "speaker_proj_weight.bin"
TOKENIZER = "tokenizer.model"
MIMI_INIT_STATE = "mimi_init_state"
_VOICE_NAME = re.compile(r"^[A-Za-z0-9_]+$")


def read_floats(path: Path, count: int | None = None, multiple_of: int | None = None) -> np.ndarray:
    """A raw float32 file, checked: exactly ``count`` values or a non-zero multiple."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise PackError(f"cannot read {path}: {exc}") from exc
    if size % 4:
        raise PackError(f"{path} has {size} bytes, not a whole number of float32 values")
    n = size // 4
    if count is not None and n != count:
        raise PackError(f"{path} holds {n} float32 values, expected {count}")
    if multiple_of is not None and (n == 0 or n % multiple_of):
        raise PackError(
            f"{path} holds {n} float32 values, expected a non-zero multiple of {multiple_of}"
        )
    values = np.fromfile(path, dtype="<f4").astype(np.float32)
    if not np.isfinite(values).all():
        raise PackError(f"{path} holds NaN or infinite values")
    return values


@dataclass(frozen=True)
class PackConstants:
    text_embed_table: np.ndarray  # [vocab, d_model]
    bos_emb: np.ndarray  # [latent_dim]
    bos_before_voice: np.ndarray | None  # [d_model]
    speaker_proj: np.ndarray | None  # [d_model, latent_dim] (24-layer packs only)
    tokenizer_path: Path
    directory: Path

    @classmethod
    def read(cls, pack_dir: Path, d_model: int, latent_dim: int) -> PackConstants:
        directory = pack_dir / CONSTANTS_DIR
        if not directory.is_dir():
            raise PackError(f"{pack_dir} is not a FluidAudio pack: {CONSTANTS_DIR}/ is missing")
        tokenizer = directory / TOKENIZER
        if not tokenizer.is_file():
            raise PackError(f"{directory} is incomplete: {TOKENIZER} is missing")
        table = read_floats(directory / TEXT_EMBED_TABLE, multiple_of=d_model)
        bos_before = directory / BOS_BEFORE_VOICE
        proj = directory / SPEAKER_PROJ
        return cls(
            text_embed_table=table.reshape(-1, d_model),
            bos_emb=read_floats(directory / BOS_EMB, count=latent_dim),
            bos_before_voice=read_floats(bos_before, d_model) if bos_before.is_file() else None,
            speaker_proj=(
                read_floats(proj, d_model * latent_dim).reshape(d_model, latent_dim)
                if proj.is_file()
                else None
            ),
            tokenizer_path=tokenizer,
            directory=directory,
        )

    def mimi_initial_state(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        """Zeros, or ``mimi_init_state/<name>.bin`` when its size fits the state."""
        state = np.zeros(shape, np.float32)
        path = self.directory / MIMI_INIT_STATE / f"{name}.bin"
        if state.size and path.is_file():
            if path.stat().st_size == state.size * 4:
                state[...] = np.fromfile(path, dtype="<f4").reshape(shape)
            else:
                log.warning(
                    "ignoring %s: its size does not fit state %s %s", path, name, list(shape)
                )
        return state

    def voice_path(self, name: str) -> Path:
        """``constants_bin/<name>.safetensors`` for a voice name (letters, digits, ``_``)."""
        if not _VOICE_NAME.match(name):
            raise VoiceError(f"invalid voice name {name!r}: use letters, digits and _ only")
        path = self.directory / f"{name}.safetensors"
        if not path.is_file():
            raise VoiceError(f"voice {name!r} is not in {self.directory}")
        return path

    def load_voice(
        self, name: str, layers: int, kv_heads: int, head_dim: int, max_length: int
    ) -> VoiceState:
        """A shipped voice (Kyutai KV snapshot), checked to fit the model and its caches."""
        path = self.voice_path(name)
        voice = load_voice_state(path)
        try:
            voice.check_fits(layers, kv_heads, head_dim)
        except VoiceError as exc:
            raise VoiceError(f"{path}: {exc}") from None
        if voice.length > max_length:
            raise VoiceError(f"{path}: {voice.length} positions do not fit a cache of {max_length}")
        return voice
