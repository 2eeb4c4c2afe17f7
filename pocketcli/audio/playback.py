"""Playing audio while it is generated: a jitter buffer in front of PortAudio.

Frames arrive unevenly (a chunk's first frame waits for its text prefill; two
engineers' jobs share the CPU), while a sound card pulls samples at a steady
rate. ``JitterBuffer`` holds a little audio back before it starts (and again
after running dry) so that the card never finds it empty in mid-speech;
it counts the times it did (underruns) and the least audio it held (margin).
``PortAudioSink`` plays through sounddevice, an optional extra
(``pip install 'pockettts[play]'``; on Linux also the system's PortAudio).
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any, Protocol

import numpy as np

from pocketcli.errors import NoOutputDevice
from pocketcli.errors import PlaybackError as PlaybackError  # defined there; re-exported

# Audio held back before playing starts: one 80 ms frame more than the first,
# which covers the gap to the second frame on a busy 2-core machine
# (benchmarks/bench_playback.py measures underruns and margin for other values).
DEFAULT_PREBUFFER_SECONDS = 0.16

INSTALL_HINT = (
    "pip install 'pockettts[play]' (and on Linux the PortAudio library, "
    "e.g. apt-get install libportaudio2)"
)


class AudioSink(Protocol):
    """Where frames go as they are made: a sound device, a pipe, a test's recorder."""

    def write(self, audio: np.ndarray) -> None:
        """Takes float32 mono samples at the model's rate (returns without waiting)."""
        ...

    def flush(self) -> None:
        """No more audio for now: what was written is a complete stretch (play it out)."""
        ...

    def close(self) -> None:
        """Returns once everything written has been played or written out."""
        ...

    def abort(self) -> None:
        """Stops at once, dropping what is still buffered (Ctrl-C)."""
        ...


class JitterBuffer:
    """Samples written by the generator, pulled by the audio device's callback.

    Playing starts when ``prebuffer`` samples are held, or at a ``flush``
    (the end of a stretch of speech). Running dry in mid-stretch is an
    underrun: silence is played and the buffer fills to ``prebuffer`` again.
    """

    def __init__(self, prebuffer: int) -> None:
        self.prebuffer = max(0, int(prebuffer))
        self._blocks: deque[np.ndarray] = deque()
        self._held = 0
        self._playing = False
        self._stretch_ended = False
        self._lock = threading.Lock()
        self._empty = threading.Event()
        self._empty.set()
        self.underruns = 0
        self.min_margin: int | None = None  # least samples left after a pull, mid-stretch
        self.played = 0  # samples of audio handed to the device

    @property
    def held(self) -> int:
        return self._held

    def push(self, audio: np.ndarray) -> None:
        samples = np.asarray(audio, np.float32).reshape(-1)
        if samples.size == 0:
            return
        with self._lock:
            self._blocks.append(samples)
            self._held += samples.size
            self._stretch_ended = False
            self._empty.clear()

    def flush(self) -> None:
        with self._lock:
            self._stretch_ended = True

    def clear(self) -> None:
        with self._lock:
            self._blocks.clear()
            self._held = 0
            self._playing = False
            self._empty.set()

    def wait_empty(self, timeout: float | None = None) -> bool:
        return self._empty.wait(timeout)

    def pull(self, out: np.ndarray) -> None:
        """Fills ``out`` (a 1-D float32 view) with the next samples, or silence."""
        with self._lock:
            if not self._playing:
                if self._held and (self._held >= self.prebuffer or self._stretch_ended):
                    self._playing = True
                else:
                    out[:] = 0.0
                    return
            filled = self._take(out)
            if filled < out.size:
                out[filled:] = 0.0
                self._playing = False
                if not self._stretch_ended:
                    self.underruns += 1
            elif not self._stretch_ended:
                margin = self._held
                self.min_margin = (
                    margin if self.min_margin is None else min(self.min_margin, margin)
                )
            if not self._held:
                self._playing = False
                self._empty.set()

    def _take(self, out: np.ndarray) -> int:
        filled = 0
        while filled < out.size and self._blocks:
            block = self._blocks[0]
            n = min(block.size, out.size - filled)
            out[filled : filled + n] = block[:n]
            if n == block.size:
                self._blocks.popleft()
            else:
                self._blocks[0] = block[n:]
            filled += n
        self._held -= filled
        self.played += filled
        return filled


def import_sounddevice() -> Any:
    """sounddevice, or a PlaybackError saying what to install."""
    try:
        import sounddevice
    except ImportError:
        raise PlaybackError(f"playback needs the sounddevice package: {INSTALL_HINT}") from None
    except OSError:  # the Linux wheel does not bundle PortAudio
        raise PlaybackError(f"playback needs the PortAudio library: {INSTALL_HINT}") from None
    return sounddevice


def parse_device(device: str | None) -> int | str | None:
    """``--device``: a device number, or part of its name."""
    if device is None or not device.strip():
        return None
    return int(device) if device.strip().isdigit() else device


def check_output_device(device: int | str | None) -> Any:
    """sounddevice, once it has found the output device (PlaybackError if not)."""
    sd = import_sounddevice()
    try:
        sd.query_devices(device, kind="output")
    except (sd.PortAudioError, ValueError) as exc:
        if device is None:
            raise NoOutputDevice(
                f"no sound output device to play on (PortAudio: {_first_line(exc)}); "
                "write a file with {output} instead",
                "output",
            ) from None
        raise PlaybackError(
            f"no output device {device!r} (PortAudio: {_first_line(exc)}); "
            "'python -m sounddevice' lists the devices"
        ) from None
    return sd


class PortAudioSink:
    """Plays on an output device through sounddevice, behind a ``JitterBuffer``."""

    def __init__(
        self,
        sample_rate: int,
        device: int | str | None = None,
        prebuffer_seconds: float = DEFAULT_PREBUFFER_SECONDS,
    ) -> None:
        sd = check_output_device(device)
        self.sample_rate = sample_rate
        where = "the default output device" if device is None else f"output device {device!r}"
        try:
            rate = _device_rate(sd, device, sample_rate)
            # A device that only takes its own rate (a raw ALSA hw device, WASAPI shared
            # mode) gets the audio resampled on the way in.
            self._resampler = None
            if rate != sample_rate:
                import soxr

                self._resampler = soxr.ResampleStream(sample_rate, rate, 1, dtype="float32")
            self.buffer = JitterBuffer(round(prebuffer_seconds * rate))
            self._stream = sd.OutputStream(
                samplerate=rate, device=device, channels=1, dtype="float32", callback=self._callback
            )
            self._stream.start()
        except (sd.PortAudioError, ValueError) as exc:
            raise PlaybackError(f"cannot play on {where}: {_first_line(exc)}") from None

    def _callback(self, outdata: np.ndarray, frames: int, time: Any, status: Any) -> None:
        self.buffer.pull(outdata[:, 0])

    def write(self, audio: np.ndarray) -> None:
        if self._resampler is not None:
            audio = self._resampler.resample_chunk(np.asarray(audio, np.float32))
        self.buffer.push(audio)

    def flush(self) -> None:
        self.buffer.flush()

    def close(self) -> None:
        if self._resampler is not None:
            self.buffer.push(self._resampler.resample_chunk(np.zeros(0, np.float32), last=True))
        self.buffer.flush()
        seconds = self.buffer.held / self._stream.samplerate
        self.buffer.wait_empty(timeout=seconds + 5.0)
        try:
            self._stream.stop()  # lets the device play what it already has
        finally:
            self._stream.close()

    def abort(self) -> None:
        self.buffer.clear()
        try:
            self._stream.abort()
        finally:
            self._stream.close()


def _device_rate(sd: Any, device: int | str | None, wanted: int) -> int:
    """``wanted`` if the device takes it, else the device's own default rate."""
    try:
        sd.check_output_settings(device=device, samplerate=wanted, channels=1, dtype="float32")
        return wanted
    except (sd.PortAudioError, ValueError):
        return int(sd.query_devices(device, kind="output")["default_samplerate"])


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
