"""Audio out: encoders for every output format, streamed, with bounded memory.

Library API (the CLI, batch runs and the server use these):

- ``FORMATS``, ``format_for(name, explicit=None)``: the output formats (wav,
  flac, ogg (Vorbis), opus (Ogg/Opus), mp3, and headerless ``s16le``/``f32le``
  PCM for pipes) and the one a file name or a ``--format`` value asks for.
- ``AudioEncoder(sink, format, sample_rate)``: encodes float samples block by
  block into any binary sink with ``write`` (a file, ``sys.stdout.buffer``, a
  socket file). It never needs to seek a pipe: WAV headers say "until EOF",
  and the end-of-file header fix-ups of FLAC/MP3 are dropped for sinks that
  cannot seek (the streams stay valid).
- ``encode_stream(blocks, format, sample_rate)``: the same as an iterator of
  ``bytes`` chunks, e.g. for an HTTP response body.
- ``open_audio_writer(path, format, sample_rate, peak_normalize=True,
  filters=False)``: the streamed file writer. Blocks (optionally through
  FluidAudio's causal filters) go to a float32 scratch file as they come, so
  memory does not grow with the utterance; ``finish`` peak-normalises in a
  second pass, block by block, encodes into a temporary file and publishes it
  through ``atomic_path`` (a failure or a signal keeps nothing partial; a
  device or FIFO is written into, never replaced). Use it as a context manager.

Samples that are NaN or infinite never reach a file: ``write`` raises
``ModelOutputError``; so does ``finish`` when every speech block was exact
silence (a broken voice or pack), unless only pauses were written. FLAC and
MP3 fix up their first frame when closed, so to a sink that cannot seek they
are encoded into a temporary file and sent whole at the end.
"""

from __future__ import annotations

import os
import stat
import struct
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from pocketcli.atomic import atomic_path, write_error
from pocketcli.audio.ogg import OggRestamp
from pocketcli.audio.postprocess import OutputChain
from pocketcli.errors import AudioError as AudioError  # defined there; re-exported
from pocketcli.errors import ModelOutputError

__all__ = [
    "FORMATS",
    "AudioEncoder",
    "AudioError",
    "ByteCollector",
    "AudioFileWriter",
    "OutputFormat",
    "check_finite",
    "encode_stream",
    "format_for",
    "open_audio_writer",
    "write_audio",
]


@dataclass(frozen=True)
class OutputFormat:
    name: str
    container: str | None  # libsndfile major format; None: our own writer
    subtype: str | None
    suffixes: tuple[str, ...]
    mime: str
    description: str


FORMATS: dict[str, OutputFormat] = {
    f.name: f
    for f in (
        OutputFormat("wav", None, None, (".wav", ".wave"), "audio/wav", "16-bit PCM WAV"),
        OutputFormat("flac", "FLAC", "PCM_16", (".flac",), "audio/flac", "FLAC, 16-bit"),
        OutputFormat("ogg", "OGG", "VORBIS", (".ogg", ".oga"), "audio/ogg", "Ogg Vorbis"),
        OutputFormat("opus", "OGG", "OPUS", (".opus",), "audio/ogg; codecs=opus", "Ogg Opus"),
        OutputFormat("mp3", "MP3", "MPEG_LAYER_III", (".mp3",), "audio/mpeg", "MP3"),
        OutputFormat("s16le", None, None, (".s16le", ".pcm", ".raw"), "audio/L16", "raw s16le"),
        OutputFormat("f32le", None, None, (".f32le", ".f32"), "audio/L32f", "raw f32le"),
    )
}
_ALIASES = {"wave": "wav", "vorbis": "ogg", "pcm": "s16le", "raw": "s16le", "mpeg": "mp3"}


def format_for(name: str | os.PathLike[str] | None, explicit: str | None = None) -> OutputFormat:
    """The format ``explicit`` names (case-insensitive), else the one the file
    name's suffix implies, else (no suffix, stdout, a FIFO or device) WAV. Raises ``AudioError``
    for an unknown ``explicit``, and for a suffix that is no audio format's (a
    typo is not silently written as WAV)."""
    if explicit is not None:
        key = explicit.strip().lower()
        key = _ALIASES.get(key, key)
        if key not in FORMATS:
            raise AudioError(
                f"unknown audio format {explicit!r}; choose one of {', '.join(FORMATS)}"
            )
        return FORMATS[key]
    suffix = Path(os.fspath(name)).suffix.lower() if name not in (None, "-") else ""
    for fmt in FORMATS.values():
        if suffix in fmt.suffixes:
            return fmt
    if suffix and not _is_special_file(name):
        known = ", ".join(s for fmt in FORMATS.values() for s in fmt.suffixes)
        raise AudioError(
            f"{os.fspath(name)}: {suffix!r} is no audio format's extension; name the file"
            f" .wav, .flac... ({known}) or give the format ({', '.join(FORMATS)})"
        )
    return FORMATS["wav"]


def _is_special_file(name: str | os.PathLike[str] | None) -> bool:
    """An existing FIFO, device or socket: its name says nothing of a format (WAV then)."""
    try:
        return name is not None and not stat.S_ISREG(os.stat(name).st_mode)
    except OSError:
        return False


def _clipped(block: np.ndarray) -> np.ndarray:
    """Float32 in [-1, 1] (libsndfile wraps out-of-range floats around when it converts)."""
    return np.clip(np.asarray(block, np.float32), -1.0, 1.0)


def to_pcm16(audio: np.ndarray) -> np.ndarray:
    return np.round(_clipped(audio) * 32767.0).astype("<i2")


_NEEDS_SEEK = frozenset({"flac", "mp3"})
_WAV_HEADER_SIZE = 44
_UNKNOWN_SIZE = 0xFFFFFFFF  # "until EOF", read so by sox, ffmpeg, aplay and libsndfile


def wav_header(sample_rate: int, samples: int | None = None) -> bytes:
    """A 16-bit mono PCM WAV header; ``samples=None`` for a stream of unknown length."""
    data = samples * 2 if samples is not None else None
    if data is None or data + 36 > _UNKNOWN_SIZE:
        riff, data_size = _UNKNOWN_SIZE, _UNKNOWN_SIZE
    else:
        riff, data_size = data + 36, data
    header = b"RIFF" + struct.pack("<I", riff) + b"WAVE"
    header += b"fmt " + struct.pack("<IHHIIHH", 16, 1, 1, sample_rate, sample_rate * 2, 2, 16)
    return header + b"data" + struct.pack("<I", data_size)


class _Sink:
    """The file object libsndfile writes through: keeps an OSError (rather than
    letting it vanish inside a C callback) and, on a sink that cannot seek,
    drops the bytes of header fix-ups aimed at what was already sent."""

    def __init__(self, out: BinaryIO) -> None:
        self._out = out
        self.error: OSError | None = None
        try:
            self.seekable = bool(out.seekable()) and out.tell() >= 0
        except (AttributeError, OSError, ValueError):
            self.seekable = False
        self._sent = 0  # bytes written to a non-seekable sink
        self._pos = 0  # libsndfile's idea of the position

    def write(self, data) -> int:
        if self.error is not None:
            return 0
        data = bytes(data)
        try:
            if self.seekable:
                self._out.write(data)
                return len(data)
            skip = max(0, min(len(data), self._sent - self._pos))
            if skip < len(data):
                self._out.write(data[skip:])
                self._sent += len(data) - skip
            self._pos += len(data)
            return len(data)
        except OSError as exc:
            self.error = exc
            return 0

    def seek(self, offset: int, whence: int = 0) -> int:
        if self.seekable:
            return self._out.seek(offset, whence)
        base = {0: 0, 1: self._pos, 2: self._sent}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def tell(self) -> int:
        return self._out.tell() if self.seekable else self._pos

    def read(self, size: int = -1) -> bytes:  # libsndfile may probe; we never read back
        return b""

    def flush(self) -> None:
        try:
            self._out.flush()
        except OSError as exc:
            self.error = self.error or exc


def _appends(out: BinaryIO) -> bool:
    """Whether ``out`` is open in append mode (O_APPEND), where seeking cannot move writes."""
    try:
        import fcntl

        return bool(fcntl.fcntl(out.fileno(), fcntl.F_GETFL) & os.O_APPEND)
    except (ImportError, AttributeError, OSError, ValueError):
        return "a" in getattr(out, "mode", "")


class AudioEncoder:
    """Encodes mono float blocks into ``out`` in ``fmt``, as they come.

    ``samples`` (known total length) lets a WAV header carry exact sizes; when
    it is None the header says "until EOF", which every common reader accepts.
    """

    def __init__(
        self,
        out: BinaryIO,
        fmt: OutputFormat | str,
        sample_rate: int,
        *,
        samples: int | None = None,
        flush: bool = False,
    ) -> None:
        self.format = fmt if isinstance(fmt, OutputFormat) else format_for(None, fmt)
        self._out = out
        self._sample_rate = sample_rate
        self._flush = flush
        self._sound = None
        # Ogg pages pass through OggRestamp: a serial from the content, not libsndfile's clock.
        self._ogg = OggRestamp(out) if self.format.container == "OGG" else None
        self._sink = _Sink(self._ogg or out)
        self._spool: BinaryIO | None = None
        if self.format.name in _NEEDS_SEEK and not self._sink.seekable:
            # FLAC and MP3 fix their first frame up at the end: encode into a
            # temporary file and send it whole when closed.
            self._spool = tempfile.TemporaryFile(prefix=".pockettts-audio.")  # noqa: SIM115
            self._sink = _Sink(self._spool)
        if self.format.container is not None:
            import soundfile as sf

            try:
                self._sound = sf.SoundFile(
                    self._sink,
                    "w",
                    sample_rate,
                    1,
                    subtype=self.format.subtype,
                    format=self.format.container,
                )
            except sf.LibsndfileError as exc:
                self._raise_sink_error()
                raise AudioError(
                    f"cannot encode {self.format.description}: {exc.error_string}"
                ) from None
        elif self.format.name == "wav":
            self._write(wav_header(sample_rate, samples))
        self._sizes_known = samples is not None
        self._written = 0  # samples, for the WAV header of a seekable file
        # Only a file written from its start, and not in append mode (``>>``: every write
        # lands at the end, so a patch would append); a spool is seekable, the sink it goes
        # to may not be. A regular file as stdout (``-o - > out.wav``) qualifies.
        self._patchable = (
            self._spool is None
            and self._sink.seekable
            and self._out.tell() == _WAV_HEADER_SIZE
            and not _appends(self._out)
        )

    def _raise_sink_error(self) -> None:
        if self._sink.error is not None:
            raise self._sink.error

    def _write(self, data: bytes) -> None:
        self._out.write(data)
        if self._flush:
            self._out.flush()

    def write(self, block: np.ndarray) -> None:
        if self._sound is not None:
            import soundfile as sf

            # Lossless 16-bit formats get the very samples of WAV and raw PCM
            # (libsndfile's own float conversion rounds differently).
            lossless = self.format.subtype == "PCM_16"
            try:
                self._sound.write(to_pcm16(block) if lossless else _clipped(block))
            except sf.LibsndfileError:
                self._raise_sink_error()
                raise
            self._raise_sink_error()
            if self._flush:
                self._sink.flush()
                self._raise_sink_error()
        elif self.format.name == "f32le":
            self._write(_clipped(block).astype("<f4").tobytes())
        else:
            self._write(to_pcm16(block).tobytes())
        self._written += np.asarray(block).size

    def close(self) -> None:
        if self._sound is not None:
            sound, self._sound = self._sound, None
            sound.close()
            self._raise_sink_error()
        if self._ogg is not None:
            self._ogg.close()
        if self.format.name == "wav" and not self._sizes_known and self._patchable:
            # A file we opened can say its length: patch the sizes the header left open.
            header = wav_header(self._sample_rate, self._written)
            end = self._out.tell()
            self._out.seek(4)
            self._out.write(header[4:8])
            self._out.seek(40)
            self._out.write(header[40:44])
            self._out.seek(end)
            self._sizes_known = True
        if self._spool is not None:
            spool, self._spool = self._spool, None
            with spool:
                spool.seek(0)
                while data := spool.read(1 << 20):
                    self._out.write(data)
        if self._flush:
            self._out.flush()


class ByteCollector:
    """A write-only sink that hands out (``take``) what was written since the last call."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def write(self, data: bytes) -> int:
        self.parts.append(bytes(data))
        return len(data)

    def flush(self) -> None:
        pass

    def seekable(self) -> bool:
        return False

    def take(self) -> bytes:
        data, self.parts = b"".join(self.parts), []
        return data


def encode_stream(
    blocks: Iterable[np.ndarray],
    fmt: OutputFormat | str,
    sample_rate: int,
    *,
    samples: int | None = None,
) -> Iterator[bytes]:
    """The encoded bytes of ``blocks`` (float samples in [-1, 1]) as they are made.

    ``samples``: the total, when the whole audio is made before it is sent (a
    non-streaming HTTP answer): a WAV header then says its true sizes instead of
    "until EOF" (0xFFFFFFFF, which ``soxi`` reads as 24 h 51 min)."""
    sink = ByteCollector()
    encoder = AudioEncoder(sink, fmt, sample_rate, samples=samples)  # type: ignore[arg-type]
    for block in blocks:
        check_finite(block)
        encoder.write(block)
        if data := sink.take():
            yield data
    encoder.close()
    if data := sink.take():
        yield data


def check_finite(block: np.ndarray) -> None:
    """Raises ``ModelOutputError`` when ``block`` holds NaN or infinity."""
    if block.size and not np.isfinite(block).all():
        raise ModelOutputError(
            "the model produced NaN or infinite audio: the voice or the model pack is broken"
        )


_BLOCK = 1 << 16  # samples per block of the second pass


class AudioFileWriter:
    """Streams one utterance to ``path`` (see the module docstring)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        fmt: OutputFormat | str | None,
        sample_rate: int,
        *,
        peak_normalize: bool = True,
        filters: bool = False,
    ) -> None:
        self.path = Path(path)
        self.format = fmt if isinstance(fmt, OutputFormat) else format_for(self.path, fmt)
        self.sample_rate = sample_rate
        self.samples = 0
        self._chain = OutputChain(sample_rate) if filters else None
        self._normalize = peak_normalize
        self._peak = 0.0
        self._speech = False  # any speech block written
        self._speech_peak = 0.0
        self._stack = ExitStack()
        self._final = self._stack.enter_context(atomic_path(self.path))
        try:
            if self._normalize:  # float32 scratch, normalised in a second pass
                self._scratch = self._stack.enter_context(  # beside the temporary file
                    tempfile.TemporaryFile(prefix=".pockettts-audio.", dir=self._final.parent)  # noqa: SIM115
                )
                self._encoder: AudioEncoder | None = None
            else:
                out = self._stack.enter_context(open(self._final, "wb"))  # noqa: SIM115
                self._encoder = AudioEncoder(out, self.format, sample_rate)
        except BaseException as exc:
            self._abort(exc)
            raise

    def __enter__(self) -> AudioFileWriter:
        return self

    def __exit__(self, kind, exc, tb) -> None:
        if exc is None:
            self.finish()
        else:
            self._abort(exc)

    def write(self, block: np.ndarray, *, speech: bool = True) -> None:
        """Appends float samples; ``speech=False`` for a pause (silence is expected)."""
        block = np.asarray(block, np.float32)
        try:
            check_finite(block)
            if speech and block.size:
                self._speech = True
                self._speech_peak = max(self._speech_peak, float(np.abs(block).max()))
            if self._chain is not None:
                block = self._chain.process(block)
            if self._normalize:
                if block.size:
                    self._peak = max(self._peak, float(np.abs(block).max()))
                self._scratch.write(block.astype("<f4").tobytes())
            else:
                assert self._encoder is not None
                self._encoder.write(block)
            self.samples += block.size
        except OSError as exc:
            raise write_error(self.path, exc) from None

    def finish(self) -> None:
        """Normalises and encodes (if needed), then publishes the file."""
        try:
            if self._speech and self._speech_peak == 0.0:
                raise ModelOutputError(
                    f"not writing {self.path}: the model produced only silence "
                    "(the voice or the model pack is broken)"
                )
            if self._normalize:
                self._second_pass()
            elif self._encoder is not None:
                self._encoder.close()
        except BaseException as exc:
            self._abort(exc)
            raise
        self._stack.close()  # closes the files, then atomic_path publishes

    def _second_pass(self) -> None:
        # Divided as postprocess.peak_normalize does, so the samples equal synthesize()'s.
        peak = np.float32(self._peak) if self._peak > 0 else np.float32(1.0)
        self._scratch.seek(0)
        with open(self._final, "wb") as out:
            encoder = AudioEncoder(out, self.format, self.sample_rate, samples=self.samples)
            while data := self._scratch.read(_BLOCK * 4):
                encoder.write((np.frombuffer(data, "<f4") / peak).astype(np.float32))
            encoder.close()

    def abort(self) -> None:
        """Drops everything written so far; nothing appears at ``path``."""
        self._abort(RuntimeError("aborted"))

    def _abort(self, exc: BaseException) -> None:
        self._stack.__exit__(type(exc), exc, exc.__traceback__)


def open_audio_writer(
    path: str | os.PathLike[str],
    fmt: OutputFormat | str | None,
    sample_rate: int,
    *,
    peak_normalize: bool = True,
    filters: bool = False,
) -> AudioFileWriter:
    """A streamed file writer (``with open_audio_writer(...) as w: w.write(block)``).

    ``peak_normalize`` divides the whole utterance by its peak (second pass);
    ``filters`` applies FluidAudio's causal filters here, for raw model frames
    (``PocketTTS.stream`` already applies them when its ``output_chain`` is on).
    """
    return AudioFileWriter(path, fmt, sample_rate, peak_normalize=peak_normalize, filters=filters)


def write_audio(
    path: str | os.PathLike[str],
    audio: np.ndarray,
    sample_rate: int,
    fmt: OutputFormat | str | None = None,
) -> None:
    """Writes a whole array as it is (no output chain), atomically."""
    with open_audio_writer(path, fmt, sample_rate, peak_normalize=False) as writer:
        writer.write(audio, speech=False)
