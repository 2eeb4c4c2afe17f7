"""24 kHz mono 16-bit WAV: whole files atomically, or a stream to a pipe.

Thin names over ``pocketcli.audio.output``, which holds every format.
"""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

import numpy as np

from pocketcli.audio.output import AudioEncoder, to_pcm16, write_audio

__all__ = ["WavStream", "to_pcm16", "write_wav"]


def write_wav(path: str | Path, audio: np.ndarray, sample_rate: int) -> None:
    write_audio(path, audio, sample_rate, "wav")


class WavStream(AudioEncoder):
    """Writes a WAV header, then PCM frames as they come (for ``-o -``)."""

    def __init__(self, out: BinaryIO, sample_rate: int) -> None:
        super().__init__(out, "wav", sample_rate, flush=True)
