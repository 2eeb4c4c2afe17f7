"""Writing 24 kHz mono 16-bit WAV: whole files atomically, or a stream to a pipe."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import BinaryIO

import numpy as np
import soundfile as sf

from pocketcli.atomic import atomic_path

# A streamed WAV cannot know its length up front: the RIFF and data sizes are
# set to the maximum, which sox, ffmpeg, aplay and soundfile read as "until EOF".
_UNKNOWN_SIZE = 0xFFFFFFFF


def to_pcm16(audio: np.ndarray) -> np.ndarray:
    """Float samples -> int16, clipped first (libsndfile would otherwise wrap around)."""
    clipped = np.clip(np.asarray(audio, np.float32), -1.0, 1.0)
    return np.round(clipped * 32767.0).astype(np.int16)


def write_wav(path: str | Path, audio: np.ndarray, sample_rate: int) -> None:
    with atomic_path(path) as tmp:
        sf.write(str(tmp), to_pcm16(audio), sample_rate, subtype="PCM_16", format="WAV")


class WavStream:
    """Writes a WAV header, then PCM frames as they come (for ``-o -``)."""

    def __init__(self, out: BinaryIO, sample_rate: int) -> None:
        self._out = out
        header = b"RIFF" + struct.pack("<I", _UNKNOWN_SIZE) + b"WAVE"
        header += b"fmt " + struct.pack("<IHHIIHH", 16, 1, 1, sample_rate, sample_rate * 2, 2, 16)
        header += b"data" + struct.pack("<I", _UNKNOWN_SIZE)
        self._out.write(header)

    def write(self, audio: np.ndarray) -> None:
        self._out.write(to_pcm16(audio).astype("<i2").tobytes())
        self._out.flush()
