"""Response formats: float32 frames in, bytes out as soon as the encoder has them.

``wav`` is the streamed WAV of ``pockettts tts -o -`` (RIFF and data sizes set
to the "unknown" maximum, as pocket-tts's server and ffmpeg write for pipes;
players read it to the end of the stream); ``pcm`` is OpenAI's raw 16-bit
little-endian mono at the model's rate. ``flac``, ``mp3`` and ``opus`` (Ogg)
go through libsndfile when the installed one can write them; its encoders
hand out bytes as they fill blocks (FLAC every 4096 samples, MP3 per frame,
Ogg a page at a time), and nothing already sent is ever rewritten.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from functools import cache

import numpy as np
import soundfile as sf

from pocketcli.audio.output import ByteCollector as _Collect
from pocketcli.audio.wav import WavStream, to_pcm16


@dataclass(frozen=True)
class Format:
    name: str
    media_type: str
    soundfile: tuple[str, str] | None = None  # (format, subtype) for libsndfile


FORMATS = {
    f.name: f
    for f in (
        Format("wav", "audio/wav"),
        Format("pcm", "audio/pcm"),
        Format("flac", "audio/flac", ("FLAC", "PCM_16")),
        Format("mp3", "audio/mpeg", ("MP3", "MPEG_LAYER_III")),
        Format("opus", "audio/ogg; codecs=opus", ("OGG", "OPUS")),
    )
}


@cache
def available_formats() -> tuple[str, ...]:
    """The formats this machine's libsndfile can write, in FORMATS order."""
    formats, subtypes = sf.available_formats(), sf.available_subtypes()
    return tuple(
        f.name
        for f in FORMATS.values()
        if f.soundfile is None or (f.soundfile[0] in formats and f.soundfile[1] in subtypes)
    )


class _Tail(io.RawIOBase):
    """A seekable sink for libsndfile that keeps only bytes not yet sent.

    libsndfile may seek back to patch a header at close; bytes already sent
    cannot change, so such writes are dropped (the streamed headers then say
    "length unknown", which decoders accept).
    """

    def __init__(self) -> None:
        self._sent = 0  # bytes handed out
        self._pending = bytearray()  # bytes from offset _sent on
        self._pos = 0

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def write(self, data) -> int:  # type: ignore[override]
        data = bytes(data)
        start, end = self._pos - self._sent, self._pos - self._sent + len(data)
        if end > 0:
            skip = max(0, -start)
            start = max(0, start)
            if end > len(self._pending):
                self._pending.extend(bytes(end - len(self._pending)))
            self._pending[start:end] = data[skip:]
        self._pos += len(data)
        return len(data)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        size = self._sent + len(self._pending)
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: size}[whence]
        self._pos = base + offset
        return self._pos

    def tell(self) -> int:
        return self._pos

    def read(self, size: int = -1) -> bytes:  # libsndfile reads nothing back when writing
        return b""

    def take(self) -> bytes:
        out = bytes(self._pending)
        self._sent += len(out)
        self._pending.clear()
        return out


class StreamEncoder:
    """``header()`` once, ``encode(frame)`` per frame, ``finish()`` once; each returns bytes."""

    def __init__(self, fmt: str, sample_rate: int) -> None:
        if fmt not in available_formats():
            raise ValueError(f"format {fmt!r} cannot be written here")
        self.format = FORMATS[fmt]
        self._wav: WavStream | None = None
        self._sink: _Collect | _Tail | None = None
        self._file: sf.SoundFile | None = None
        if fmt == "wav":
            self._sink = _Collect()
            self._wav = WavStream(self._sink, sample_rate)  # type: ignore[arg-type]
        elif self.format.soundfile is not None:
            container, subtype = self.format.soundfile
            self._sink = _Tail()
            self._file = sf.SoundFile(
                self._sink,
                "w",
                samplerate=sample_rate,
                channels=1,
                format=container,
                subtype=subtype,
            )

    def header(self) -> bytes:
        return self._sink.take() if self._sink is not None else b""

    def encode(self, audio: np.ndarray) -> bytes:
        if self._wav is not None:
            self._wav.write(audio)
        elif self._file is not None:
            self._file.write(to_pcm16(audio))  # the same samples as wav and pcm
        else:
            return to_pcm16(audio).astype("<i2").tobytes()
        assert self._sink is not None
        return self._sink.take()

    def finish(self) -> bytes:
        if self._file is not None:
            self.close()
            assert self._sink is not None
            return self._sink.take()
        return b""

    def close(self) -> None:
        if self._file is not None and not self._file.closed:
            self._file.close()
