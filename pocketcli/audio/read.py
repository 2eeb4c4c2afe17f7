"""Reading a recording (for voice cloning) into mono float32 samples.

soundfile (libsndfile) reads WAV, FLAC, OGG/Vorbis, Opus and MP3 on every OS
from the wheel alone. It cannot read M4A/AAC (MP4 containers): those go
through PyAV when the optional ``m4a`` extra is installed, and otherwise get
a message naming the extra. Channels are averaged, as pocket-tts does. Only
the first ``max_seconds`` are decoded, so a long file costs no memory.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
import soundfile as sf

from pocketcli.errors import UserError

SOUNDFILE_FORMATS = "WAV, FLAC, OGG/Vorbis, Opus, MP3"
M4A_EXTRA = "pip install 'pockettts[m4a]'"
_MP4_SUFFIXES = {".m4a", ".m4b", ".mp4", ".aac", ".3gp", ".mov", ".alac"}
_MAX_RATE = 768_000


class AudioReadError(UserError, ValueError):
    """An audio file cannot be read: missing, corrupt or in a format we do not decode."""


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
    if not path.is_file():
        raise AudioReadError(f"audio file not found: {path}")
    try:
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
        # libsndfile's own words: its full message names the in-memory file object.
        cause = exc.error_string if isinstance(exc, sf.LibsndfileError) else _first_line(exc)
        raise AudioReadError(
            f"cannot read {name}: not a {SOUNDFILE_FORMATS} file, or damaged ({cause})"
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
        limit = -1 if max_seconds is None else int(max_seconds * rate)
        wanted = total if limit < 0 else min(total, limit)
        _check_size(path, rate, channels, wanted, max_samples)
        data = f.read(frames=limit, dtype="float32", always_2d=True)
    return DecodedAudio(_mix(data), rate, channels, max(total, data.shape[0]) / rate)


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
            f" ({_first_line(error)}); M4A/AAC needs {M4A_EXTRA}"
        ) from None
    try:
        return _read_av(path, max_seconds)
    except AudioReadError:
        if _looks_like_mp4(path):
            raise
    # Neither could read it: libsndfile says more about a damaged WAV/FLAC than FFmpeg.
    raise AudioReadError(
        f"cannot read {path}: not a {SOUNDFILE_FORMATS} or M4A/AAC file,"
        f" or damaged ({_first_line(error)})"
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
            # Planar float at the file's own rate and layout: we mix and resample ourselves.
            resampler = av.AudioResampler(format="fltp")
            blocks: list[np.ndarray] = []
            have = 0
            for frame in container.decode(stream):
                for out in resampler.resample(frame):
                    block = out.to_ndarray().reshape(channels, -1)
                    blocks.append(block)
                    have += block.shape[1]
                if limit is None:  # no length known up front: checked as it is decoded
                    _check_size(path, rate, channels, have, max_samples)
                if limit is not None and have >= limit:
                    break
            total = _av_duration(container, stream)
    except AudioReadError:
        raise
    except (av.FFmpegError, OSError, ValueError) as exc:
        raise AudioReadError(f"cannot read {path}: {_first_line(exc)}") from None
    data = np.concatenate(blocks, axis=1).T if blocks else np.zeros((0, channels), np.float32)
    if limit is not None:
        data = data[:limit]
    return DecodedAudio(
        _mix(data.astype(np.float32, copy=False)), rate, channels, max(total, data.shape[0] / rate)
    )


def _av_duration(container, stream) -> float:
    if stream.duration is not None and stream.time_base is not None:
        return float(stream.duration * stream.time_base)
    return float(container.duration or 0) / 1_000_000


def _check_layout(path: Path, rate: int, channels: int) -> None:
    if not 0 < rate <= _MAX_RATE:
        raise AudioReadError(f"{path} has an unusable sample rate of {rate} Hz")
    if channels < 1:
        raise AudioReadError(f"{path} has no audio channels")


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


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
