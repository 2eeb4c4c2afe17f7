"""Speaking rate: time-stretching that keeps pitch and timbre (issue 36).

``Stretcher`` is one stream's time-stretcher: audiotsm's WSOLA (waveform-similarity
overlap-add: 512-sample Hann windows, 256-sample synthesis hop, windows shifted by up
to 256 samples to where the waveforms line up), fed 80 ms frame by 80 ms frame with its
state kept between them, so a streamed text is stretched exactly as the whole
(``benchmarks/bench_stretch.py`` measured it against Rubber Band, pytsmod and
audiotsm's phase vocoder: README, "Speaking rate"). A speed of 1.0 never builds one:
the samples stay exactly the model's.
"""

from __future__ import annotations

import math

import numpy as np

MIN_SPEED = 0.25  # OpenAI's range for speech's `speed`
MAX_SPEED = 4.0
# 21 ms windows: the first stretched samples come with the model's first 80 ms frame
# up to 2x (1024-sample windows held them a frame longer from 0.8x up, and measured
# no better on speech: benchmarks/bench_stretch.py).
FRAME_LENGTH = 512
SYNTHESIS_HOP = 256


def check_speed(speed: object) -> str | None:
    """Why ``speed`` is not a speaking rate (None when it is one)."""
    if (
        isinstance(speed, bool)
        or not isinstance(speed, int | float)
        or not math.isfinite(speed)
        or not MIN_SPEED <= speed <= MAX_SPEED
    ):
        return f"must be a number from {MIN_SPEED:g} to {MAX_SPEED:g}, not {speed!r}"
    return None


class _Collect:
    """audiotsm's writer interface, collecting what it is given."""

    channels = 1

    def __init__(self) -> None:
        self.parts: list[np.ndarray] = []

    def write(self, buffer: np.ndarray) -> int:
        self.parts.append(buffer[0].astype(np.float32))
        return buffer.shape[1]

    def take(self) -> np.ndarray:
        out = np.concatenate(self.parts) if self.parts else np.zeros(0, np.float32)
        self.parts = []
        return out


class Stretcher:
    """One stream's time-stretcher: ``process`` each frame in order, then ``flush``.

    The output of all calls joined is the input played at ``speed`` (1.3: 1/1.3 of
    its duration) with its pitch. Nothing is shared between instances.
    """

    # Input samples WSOLA needs before its first output: one window and the search's
    # tolerance either side (43 ms at 24 kHz, inside the first 80 ms frame). From 2x up
    # each output hop reads 2 * 256 input samples or more, so the first audio comes
    # with the second frame at 4x: at most one frame (80 ms) after 1.0's.
    LATENCY = FRAME_LENGTH + 2 * SYNTHESIS_HOP

    def __init__(
        self, speed: float, frame_length: int = FRAME_LENGTH, synthesis_hop: int = SYNTHESIS_HOP
    ) -> None:
        from audiotsm import wsola
        from audiotsm.io.array import ArrayReader

        self.speed = float(speed)
        self._reader = ArrayReader
        self._tsm = wsola(
            1, speed=self.speed, frame_length=frame_length, synthesis_hop=synthesis_hop
        )
        self._out = _Collect()
        self._pad = np.zeros(frame_length, np.float64)
        self._taken = 0  # input samples given
        self._given = 0  # output samples returned

    def process(self, audio: np.ndarray) -> np.ndarray:
        """The stretched samples that ``audio`` (the next input) completes (maybe none)."""
        self._taken += len(audio)
        out = self._run(np.asarray(audio, np.float64))
        self._given += len(out)
        return out

    def _run(self, audio: np.ndarray) -> np.ndarray:
        reader = self._reader(audio[None, :])
        finished = False
        while not (finished and reader.empty):
            self._tsm.read_from(reader)
            _, finished = self._tsm.write_to(self._out)
        return self._out.take()

    def flush(self) -> np.ndarray:
        """The last stretched samples once the input has ended: the output is then
        exactly ``round(input / speed)`` samples long (the tail the windows still
        hold is pushed out with silence, and what it adds past that is cut)."""
        target = round(self._taken / self.speed)
        parts = []
        given = self._given
        while given < target:
            part = self._run(self._pad)
            parts.append(part)
            given += len(part)
        tail = np.concatenate(parts) if parts else np.zeros(0, np.float32)
        tail = tail[: max(0, target - self._given)]
        self._given += len(tail)
        return tail
