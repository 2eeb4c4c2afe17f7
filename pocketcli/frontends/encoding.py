"""Response formats: the library's encoders (``pocketcli.audio.output``) under OpenAI's names.

The bytes are those of ``pockettts tts -o - --format F`` for the same seed and
settings: ``wav`` is the streamed WAV (sizes "unknown", read to the end of the
stream) and ``pcm`` OpenAI's raw 16-bit little-endian mono at the model's
rate; both leave frame by frame. ``opus`` (Ogg) leaves a page at a time.
``flac`` and ``mp3`` are sent whole when the speech is done: their encoders
fix their first frame up at the end, and a stream with that fix-up dropped
is not a valid file for every decoder (see the library's module docstring).
"""

from __future__ import annotations

from functools import cache

import numpy as np

from pocketcli.audio.output import FORMATS as LIBRARY_FORMATS
from pocketcli.audio.output import AudioEncoder, ByteCollector, OutputFormat

# response_format -> the library's format of the same bytes
_NAMES = {"wav": "wav", "pcm": "s16le", "flac": "flac", "mp3": "mp3", "opus": "opus"}
FORMATS: dict[str, OutputFormat] = {api: LIBRARY_FORMATS[lib] for api, lib in _NAMES.items()}
_MEDIA_TYPES = {"pcm": "audio/pcm"}  # OpenAI's name for it; the rest as the library says


def media_type(fmt: str) -> str:
    return _MEDIA_TYPES.get(fmt, FORMATS[fmt].mime)


@cache
def available_formats() -> tuple[str, ...]:
    """The formats this machine's libsndfile can write, in FORMATS order."""
    import soundfile as sf

    formats, subtypes = sf.available_formats(), sf.available_subtypes()
    return tuple(
        name
        for name, f in FORMATS.items()
        if f.container is None or (f.container in formats and f.subtype in subtypes)
    )


class StreamEncoder:
    """``encode(frame)`` per frame, ``finish()`` once; each returns the bytes ready to send."""

    def __init__(self, fmt: str, sample_rate: int) -> None:
        if fmt not in available_formats():
            raise ValueError(f"format {fmt!r} cannot be written here")
        self.media_type = media_type(fmt)
        self._sink = ByteCollector()
        self._encoder: AudioEncoder | None = AudioEncoder(
            self._sink,  # type: ignore[arg-type]
            FORMATS[fmt],
            sample_rate,
        )

    def encode(self, audio: np.ndarray) -> bytes:
        assert self._encoder is not None
        self._encoder.write(audio)
        return self._sink.take()

    def finish(self) -> bytes:
        self.close()
        return self._sink.take()

    def close(self) -> None:
        if self._encoder is not None:
            encoder, self._encoder = self._encoder, None
            encoder.close()
