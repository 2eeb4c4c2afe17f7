"""FluidAudio's output chain: 80 Hz rumble high-pass, -3 dB de-essing shelf at 6 kHz.

Both filters are causal IIR filters, so they run on a whole buffer or frame by
frame with carried state (for streaming) and give the same samples either way.
Peak normalisation, the last step of FluidAudio's chain, needs the whole
utterance and so lives with the writers that have it (see ``peak_normalize``).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.signal import lfilter, lfilter_zi

HIGHPASS_HZ = 80.0
SHELF_HZ = 6000.0
SHELF_GAIN_DB = -3.0
SHELF_Q = 0.707


def _shelf_coefficients(sample_rate: int) -> tuple[np.ndarray, np.ndarray]:
    """RBJ high-shelf biquad, normalised by a0."""
    a = 10 ** (SHELF_GAIN_DB / 40)
    w = 2 * math.pi * SHELF_HZ / sample_rate
    alpha = math.sin(w) / (2 * SHELF_Q)
    cos_w, root = math.cos(w), 2 * math.sqrt(a) * alpha
    b = np.array([a * ((a + 1) + (a - 1) * cos_w + root),
                  -2 * a * ((a - 1) + (a + 1) * cos_w),
                  a * ((a + 1) + (a - 1) * cos_w - root)])
    den = np.array([(a + 1) - (a - 1) * cos_w + root,
                    2 * ((a - 1) - (a + 1) * cos_w),
                    (a + 1) - (a - 1) * cos_w - root])
    return b / den[0], den / den[0]


class OutputChain:
    """Stateful high-pass then de-esser; feed consecutive blocks of one utterance."""

    def __init__(self, sample_rate: int) -> None:
        rc = 1.0 / (2 * math.pi * HIGHPASS_HZ)
        dt = 1.0 / sample_rate
        self._alpha = rc / (rc + dt)
        self._shelf_b, self._shelf_a = _shelf_coefficients(sample_rate)
        self._shelf_state = lfilter_zi(self._shelf_b, self._shelf_a) * 0.0
        self._hp_state = np.zeros(1)
        self._previous: float | None = None     # last input sample seen

    def _highpass(self, x: np.ndarray) -> np.ndarray:
        # y[n] = alpha * (y[n-1] + x[n] - x[n-1]); the very first sample passes unchanged.
        if self._previous is None:
            first, rest = x[:1], x
            self._previous = float(x[0])
            diff = np.diff(rest)
        else:
            first = x[:0]
            diff = np.diff(np.concatenate([[self._previous], x]))
        self._previous = float(x[-1])
        y, self._hp_state = lfilter([self._alpha], [1.0, -self._alpha], diff, zi=self._hp_state)
        return np.concatenate([first, y])

    def process(self, block: np.ndarray) -> np.ndarray:
        x = np.asarray(block, np.float64)
        if x.size == 0:
            return np.zeros(0, np.float32)
        y = self._highpass(x)
        y, self._shelf_state = lfilter(self._shelf_b, self._shelf_a, y, zi=self._shelf_state)
        return y.astype(np.float32)


def apply_output_chain(audio: np.ndarray, sample_rate: int) -> np.ndarray:
    """The whole chain on a complete utterance, peak normalisation included."""
    return peak_normalize(OutputChain(sample_rate).process(audio))


def peak_normalize(audio: np.ndarray) -> np.ndarray:
    peak = float(np.max(np.abs(audio))) if audio.size else 0.0
    return (audio / np.float32(peak)).astype(np.float32) if peak > 0 else audio
