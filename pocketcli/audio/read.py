"""Reading a recording (for voice cloning) into mono float32 samples.

soundfile (libsndfile) reads WAV, FLAC, OGG/Vorbis, Opus and MP3 on every OS
from the wheel alone. It cannot read M4A/AAC (MP4 containers): those go
through PyAV when the optional ``m4a`` extra is installed, and otherwise get
a message naming the extra. Channels are averaged, as pocket-tts does.

What a recording may cost is bounded from its header, before any sample is
decoded: at most ``MAX_SAMPLE_RATE`` Hz and ``MAX_CHANNELS`` channels, and
only the first ``max_seconds`` are decoded, block by block, each block mixed
to mono at once. So memory is bounded by ``max_seconds * rate`` mono samples
whatever the file claims (a 343 KB FLAC can claim an hour of 8 channels).
Only regular files are read: a FIFO, device or socket is refused before it
is opened, so nothing blocks or reads without end.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
import soundfile as sf

from pocketcli.errors import AudioReadError as AudioReadError  # defined there; re-exported
from pocketcli.filekind import require_regular

SOUNDFILE_FORMATS = "WAV, FLAC, OGG/Vorbis, Opus, MP3"
M4A_EXTRA = "pip install 'pockettts[m4a]'"
_MP4_SUFFIXES = {".m4a", ".m4b", ".mp4", ".aac", ".3gp", ".mov", ".alac"}
MAX_SAMPLE_RATE = 192_000  # Hz: studio recorders' highest; above it, convert the file first
MAX_CHANNELS = 32
_BLOCK_VALUES = 1 << 16  # samples (frames x channels) decoded at once: 256 KB of float32


@dataclass(frozen=True)
class DecodedAudio:
    """Mono samples and what the file held before mixing and cutting."""

    samples: np.ndarray  # float32 [n], channels averaged
    sample_rate: int
    channels: int
    total_seconds: float  # the whole file, even when fewer samples were decoded

    @property
    def seconds(self) -> float:
        return self.samples.shape[0] / self.sample_rate


def read_audio(path: str | Path, max_seconds: float | None = None) -> DecodedAudio:
    """Decodes ``path`` (at most its first ``max_seconds``) to mono float32."""
    path = Path(path)
    check_regular(path)
    try:
        with _quiet_decoder(path):
            decoded = _read_soundfile(path, max_seconds)
    except (sf.LibsndfileError, RuntimeError, TypeError, ValueError) as exc:
        decoded = _read_fallback(path, max_seconds, exc)
    if decoded.samples.shape[0] == 0:
        raise AudioReadError(f"{path} holds no audio samples")
    return decoded


def read_audio_bytes(
    data: bytes, name: str, max_seconds: float | None = None, max_samples: int | None = None
) -> DecodedAudio:
    """Decodes a recording held in memory (an upload: it never touches the disk).

    ``name`` only labels messages. The formats are soundfile's, and what FFmpeg
    reads when PyAV (the m4a extra) is installed. ``max_samples`` bounds what is
    decoded (samples of all channels, within ``max_seconds``): checked from the
    header's rate and channels before decoding, refused with ``AudioReadError``.
    """
    label = Path(name)
    try:
        with _quiet_decoder(label, data[:3]):
            decoded = _read_soundfile(
                label, max_seconds, source=io.BytesIO(data), max_samples=max_samples
            )
    except AudioReadError:
        raise
    except (sf.LibsndfileError, RuntimeError, TypeError, ValueError) as exc:
        # A FLAC streamed with no length in its header (as ``pockettts serve`` sends)
        # defeats libsndfile in memory; FFmpeg reads it, when the m4a extra is there.
        try:
            decoded = _read_av(label, max_seconds, io.BytesIO(data), max_samples)
        except (ImportError, AudioReadError):
            decoded = None
        if decoded is not None and decoded.samples.shape[0] > 0:
            return decoded
        # libsndfile's own words (its full message names the in-memory file object),
        # without its guess of "a pipe" for data it does not recognise
        raise AudioReadError(
            f"cannot read {name}: not a {SOUNDFILE_FORMATS} file, or damaged ({_cause(exc)})"
        ) from None
    if decoded.samples.shape[0] == 0:
        raise AudioReadError(f"{name} holds no audio samples")
    return decoded


def _read_soundfile(
    path: Path,
    max_seconds: float | None,
    source: BinaryIO | None = None,
    max_samples: int | None = None,
) -> DecodedAudio:
    with sf.SoundFile(str(path) if source is None else source) as f:
        rate, channels, total = int(f.samplerate), int(f.channels), int(f.frames)
        _check_layout(path, rate, channels)
        limit = None if max_seconds is None else int(max_seconds * rate)
        wanted = total if limit is None else min(total, limit)
        _check_size(path, rate, channels, wanted, max_samples)
        block = max(1, _BLOCK_VALUES // channels)
        parts: list[np.ndarray] = []
        have = 0
        while limit is None or have < limit:
            want = block if limit is None else min(block, limit - have)
            data = f.read(frames=want, dtype="float32", always_2d=True)
            if data.shape[0] == 0:
                break
            parts.append(_mix(data))
            have += data.shape[0]
            if limit is None:  # a header may understate the length: checked as decoded
                _check_size(path, rate, channels, have, max_samples)
    mono = np.concatenate(parts) if parts else np.zeros(0, np.float32)
    return DecodedAudio(mono, rate, channels, max(total, have) / rate)


def _read_fallback(path: Path, max_seconds: float | None, error: Exception) -> DecodedAudio:
    """Formats libsndfile does not know: PyAV if installed, else a message that says what to do."""
    try:
        import av  # noqa: F401  (optional: the m4a extra)
    except ImportError:
        if _looks_like_mp4(path):
            raise AudioReadError(
                f"cannot read {path}: M4A/AAC needs the optional decoder, install it with"
                f" {M4A_EXTRA} (or convert the file to WAV or FLAC)"
            ) from None
        raise AudioReadError(
            f"cannot read {path}: not a {SOUNDFILE_FORMATS} file, or damaged"
            f" ({_cause(error)}); M4A/AAC needs {M4A_EXTRA}"
        ) from None
    try:
        return _read_av(path, max_seconds)
    except AudioReadError:
        if _looks_like_mp4(path):
            raise
    # Neither could read it: libsndfile says more about a damaged WAV/FLAC than FFmpeg.
    raise AudioReadError(
        f"cannot read {path}: not a {SOUNDFILE_FORMATS} or M4A/AAC file,"
        f" or damaged ({_cause(error)})"
    ) from None


def _read_av(
    path: Path,
    max_seconds: float | None,
    source: BinaryIO | None = None,
    max_samples: int | None = None,
) -> DecodedAudio:
    import av

    try:
        with av.open(str(path) if source is None else source) as container:
            stream = next((s for s in container.streams if s.type == "audio"), None)
            if stream is None:
                raise AudioReadError(f"{path} has no audio stream")
            rate, channels = int(stream.rate or 0), int(stream.channels or 0)
            _check_layout(path, rate, channels)
            limit = None if max_seconds is None else int(max_seconds * rate)
            if limit is not None:
                _check_size(path, rate, channels, limit, max_samples)
            # Packed float at the file's own rate and layout: we mix and resample ourselves.
            # (Not planar: PyAV's planes of an 8-channel frame overrun, and it crashes.)
            resampler = av.AudioResampler(format="flt")
            blocks: list[np.ndarray] = []  # mono, mixed frame by frame
            have = 0
            for frame in container.decode(stream):
                for out in resampler.resample(frame):
                    block = _mix(out.to_ndarray().reshape(-1, channels).astype(np.float32))
                    blocks.append(block)
                    have += block.shape[0]
                if limit is None:  # no length known up front: checked as it is decoded
                    _check_size(path, rate, channels, have, max_samples)
                if limit is not None and have >= limit:
                    break
            total = _av_duration(container, stream)
    except AudioReadError:
        raise
    except (av.FFmpegError, OSError, ValueError) as exc:
        raise AudioReadError(f"cannot read {path}: {_first_line(exc)}") from None
    mono = np.concatenate(blocks) if blocks else np.zeros(0, np.float32)
    if limit is not None:
        mono = mono[:limit]
    return DecodedAudio(mono, rate, channels, max(total, mono.shape[0] / rate))


def _av_duration(container, stream) -> float:
    if stream.duration is not None and stream.time_base is not None:
        return float(stream.duration * stream.time_base)
    return float(container.duration or 0) / 1_000_000


def check_regular(path: Path) -> None:
    """Missing, a folder, or a special file (FIFO, device, socket): refused before opening."""
    require_regular(path, "audio file", AudioReadError)


def _check_layout(path: Path, rate: int, channels: int) -> None:
    """The header's rate and channels bound what decoding may cost: checked before it."""
    if rate <= 0:
        raise AudioReadError(f"{path} has an unusable sample rate of {rate} Hz")
    if rate > MAX_SAMPLE_RATE:
        raise AudioReadError(
            f"{path} has a sample rate of {rate} Hz; at most {MAX_SAMPLE_RATE} Hz is read"
            " (convert it, e.g. to 48 kHz, and try again)"
        )
    if channels < 1:
        raise AudioReadError(f"{path} has no audio channels")
    if channels > MAX_CHANNELS:
        raise AudioReadError(
            f"{path} has {channels} channels; at most {MAX_CHANNELS} are read"
            " (mix it down, e.g. to mono, and try again)"
        )


def _check_size(path: Path, rate: int, channels: int, frames: int, max_samples: int | None) -> None:
    """Refuses, before decoding it, audio whose decoded samples would pass ``max_samples``."""
    if max_samples is None or frames * channels <= max_samples:
        return
    raise AudioReadError(
        f"{path}: {frames / rate:.1f} s at {rate} Hz in {channels} channels would decode to "
        f"{frames * channels} samples, over the limit of {max_samples}"
    )


def _mix(data: np.ndarray) -> np.ndarray:
    """[n, channels] -> [n], the mean of the channels (pocket-tts's down-mix)."""
    mono = data[:, 0] if data.shape[1] == 1 else data.mean(axis=1)
    return np.ascontiguousarray(mono, np.float32)


def _looks_like_mp4(path: Path) -> bool:
    """An MP4/M4A container (``ftyp`` box) or a raw AAC ADTS stream, or named like one."""
    if path.suffix.lower() in _MP4_SUFFIXES:
        return True
    try:
        with open(path, "rb") as f:
            head = f.read(12)
    except OSError:
        return False
    return head[4:8] == b"ftyp" or (len(head) >= 2 and head[0] == 0xFF and head[1] & 0xF6 == 0xF0)


def _cause(exc: BaseException) -> str:
    """libsndfile's reason without its guesses: a regular file that it cannot open is
    unrecognised or damaged data, never "a pipe"."""
    text = exc.error_string if isinstance(exc, sf.LibsndfileError) else _first_line(exc)
    if "possibly a pipe" in text or "does not exist" in text:
        return "unrecognised or damaged data"
    return text


_QUIET = threading.Lock()  # one descriptor 2 for the process: one quiet decode at a time


@contextlib.contextmanager
def _quiet_decoder(path: Path, head: bytes | None = None) -> Iterator[None]:
    """libmpg123 (inside libsndfile) prints its resync notes straight to descriptor 2:
    while an MP3 is decoded, that descriptor points at /dev/null. Only for MP3, whose
    decoder is the noisy one, and only when stderr is a real descriptor. ``head``: the
    first bytes of a recording held in memory (an upload), else the file's are read.
    The servers' logs write to their own copy of descriptor 2 (``frontends.logs``), so
    no log line is lost meanwhile."""
    if path.suffix.lower() != ".mp3" and not _mp3_head(_head(path) if head is None else head):
        yield
        return
    with _QUIET:
        try:
            saved = os.dup(2)
        except OSError:
            yield
            return
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            sys.stderr.flush()
            os.dup2(null, 2)
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            os.close(null)


def _head(path: Path) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(3)
    except OSError:
        return b""


def _mp3_head(head: bytes) -> bool:
    return head == b"ID3" or (len(head) >= 2 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
