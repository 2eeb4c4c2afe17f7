"""Writing 24 kHz mono WAV files, atomically."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import soundfile as sf

from pocketcli.atomic import atomic_path


def to_pcm16(audio: np.ndarray) -> np.ndarray:
    """Float samples -> int16, clipped first (libsndfile would otherwise wrap around)."""
    clipped = np.clip(np.asarray(audio, np.float32), -1.0, 1.0)
    return np.round(clipped * 32767.0).astype(np.int16)


def write_wav(path: str | Path, audio: np.ndarray, sample_rate: int) -> None:
    with atomic_path(path) as tmp:
        sf.write(str(tmp), to_pcm16(audio), sample_rate, subtype="PCM_16", format="WAV")
