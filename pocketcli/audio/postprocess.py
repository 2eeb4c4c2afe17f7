"""FluidAudio's output chain: 80 Hz rumble high-pass, -3 dB de-essing shelf at 6 kHz.

Both filters are causal IIR filters, so they run on a whole buffer or frame by
frame with carried state (for streaming) and give the same samples either way.
Peak normalisation, the last step of FluidAudio's chain, needs the whole
utterance and so lives with the writers that have it (see ``peak_normalize``).

The recursions are numpy here, not ``scipy.signal.lfilter``: importing
scipy.signal took 1.1 s, a third of a whole ``pockettts tts`` process, for
two first- and second-order filters. Each filter is its FIR numerator, then an
all-pole recursion vectorised over blocks (``AllPole``).
"""

from __future__ import annotations

import functools
import math

import numpy as np

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
    b = np.array(
        [
            a * ((a + 1) + (a - 1) * cos_w + root),
            -2 * a * ((a - 1) + (a + 1) * cos_w),
            a * ((a + 1) + (a - 1) * cos_w - root),
        ]
    )
    den = np.array(
        [
            (a + 1) - (a - 1) * cos_w + root,
            2 * ((a - 1) - (a + 1) * cos_w),
            (a + 1) - (a - 1) * cos_w - root,
        ]
    )
    return b / den[0], den / den[0]


_BLOCK = 64


@functools.lru_cache(maxsize=8)
def _pole_tables(a: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
    """``AllPole``'s zero-state Toeplitz matrix ``[L, L]`` and free responses
    ``[order, L]`` for the recursion ``a`` (read-only: every stream of one sample rate
    shares them; building them cost 0.8 ms a stream, on the way to its first audio)."""
    order = len(a)
    # Outputs for a unit input at 0 (impulse) and for a unit y[-1] or y[-2] (free).
    seqs = np.zeros((1 + order, order + _BLOCK))
    seqs[0, order] = 1.0
    for i in range(order):
        seqs[1 + i, order - 1 - i] = 1.0
    for k in range(order, order + _BLOCK):
        seqs[:, k] -= sum(a[j] * seqs[:, k - 1 - j] for j in range(order))
    impulse, free = seqs[0, order:], seqs[1:, order:]  # [L], [order, L]
    lag = np.arange(_BLOCK)
    gap = lag[None, :] - lag[:, None]
    toeplitz = np.where(gap >= 0, impulse[np.maximum(gap, 0)], 0.0)
    toeplitz.flags.writeable = free.flags.writeable = False
    return toeplitz, free


class AllPole:
    """``y[n] = v[n] - a[0] y[n-1] - a[1] y[n-2]`` (first or second order), streamed.

    Vectorised in two levels: every block of 64 samples gets its zero-state
    response at once (a product with the recursion's impulse response as a
    Toeplitz matrix), then the blocks are chained in order, each adding the
    free response to its predecessor's last outputs. Real arithmetic, only
    decaying terms: equal to the plain loop to float64 rounding.
    """

    def __init__(self, a: tuple[float, ...]) -> None:
        if len(a) not in (1, 2):
            raise ValueError("AllPole handles first- and second-order recursions")
        self.order = len(a)
        self._toeplitz, self._free = _pole_tables(tuple(a))
        self.history = [0.0] * self.order  # y[-1], y[-2]

    def __call__(self, v: np.ndarray) -> np.ndarray:
        n = v.size
        if n == 0:
            return np.zeros(0)
        count = -(-n // _BLOCK)
        blocks = np.zeros((count, _BLOCK))
        blocks.reshape(-1)[:n] = v
        y = blocks @ self._toeplitz  # zero-state, block by block
        # The loop runs once per block, on Python floats, unrolled per order.
        chained = np.empty((count, self.order))
        free, last = self._free, y[:, -1].tolist()
        if self.order == 1:
            m, (h,) = free[0, -1], self.history
            for b in range(count):
                chained[b, 0] = h
                h = last[b] + m * h
        else:
            before = y[:, -2].tolist()
            m11, m12, m21, m22 = free[0, -1], free[1, -1], free[0, -2], free[1, -2]
            h, h2 = self.history
            for b in range(count):
                chained[b, 0], chained[b, 1] = h, h2
                h, h2 = last[b] + m11 * h + m12 * h2, before[b] + m21 * h + m22 * h2
        y += chained @ free
        out = y.reshape(-1)[:n]
        newest_first = [*out[::-1][: self.order].tolist(), *self.history]
        self.history = newest_first[: self.order]
        return out


class OutputChain:
    """Stateful high-pass then de-esser; feed consecutive blocks of one utterance."""

    def __init__(self, sample_rate: int) -> None:
        rc = 1.0 / (2 * math.pi * HIGHPASS_HZ)
        dt = 1.0 / sample_rate
        self._alpha = rc / (rc + dt)
        self._highpass_pole = AllPole((-self._alpha,))
        self._shelf_b, shelf_a = _shelf_coefficients(sample_rate)
        self._shelf_poles = AllPole((float(shelf_a[1]), float(shelf_a[2])))
        self._shelf_inputs = np.zeros(2)  # x[n-2], x[n-1]
        self._previous: float | None = None  # last input sample seen

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
        return np.concatenate([first, self._highpass_pole(self._alpha * diff)])

    def _shelf(self, x: np.ndarray) -> np.ndarray:
        padded = np.concatenate([self._shelf_inputs, x])
        b0, b1, b2 = self._shelf_b
        self._shelf_inputs = padded[-2:]
        return self._shelf_poles(b0 * padded[2:] + b1 * padded[1:-1] + b2 * padded[:-2])

    def process(self, block: np.ndarray) -> np.ndarray:
        x = np.asarray(block, np.float64)
        if x.size == 0:
            return np.zeros(0, np.float32)
        return self._shelf(self._highpass(x)).astype(np.float32)


def apply_output_chain(audio: np.ndarray, sample_rate: int) -> np.ndarray:
    """The whole chain on a complete utterance, peak normalisation included."""
    return peak_normalize(OutputChain(sample_rate).process(audio))


def peak_normalize(audio: np.ndarray) -> np.ndarray:
    peak = float(np.max(np.abs(audio))) if audio.size else 0.0
    return (audio / np.float32(peak)).astype(np.float32) if peak > 0 else audio
