"""Sample-rate conversion as pocket-tts does it, in numpy.

pocket-tts resamples a voice prompt with ``scipy.signal.resample_poly``
(``convert_audio``); a prompt resampled any other way gives another voice
state. This is that function's default path, without importing scipy: the
rates reduced by their gcd to ``up/down``, a linear-phase low-pass FIR of
``2 * 10 * max(up, down) + 1`` taps (``firwin`` with cutoff ``1/max(up, down)``
of Nyquist and a Kaiser window of beta 5, scaled to unit DC gain, times
``up``), zero padding outside the signal, and the same alignment (the output
sample ``m`` sits at input time ``m * down / up``). It is computed as a
polyphase sum in float64, so it equals scipy's float32 result to about 1e-7.
"""

from __future__ import annotations

import math

import numpy as np

KAISER_BETA = 5.0  # resample_poly's default window=("kaiser", 5.0)
_BLOCK = 16_384  # output samples per vectorised block (bounds the gather's memory)


def lowpass_filter(up: int, down: int) -> np.ndarray:
    """``resample_poly``'s filter for coprime ``up``/``down`` (before its ``* up``)."""
    max_rate = max(up, down)
    half_len = 10 * max_rate
    taps = 2 * half_len + 1
    cutoff = 1.0 / max_rate
    m = np.arange(taps, dtype=np.float64) - half_len
    h = cutoff * np.sinc(cutoff * m) * np.kaiser(taps, KAISER_BETA)
    return h / h.sum()


def resample_poly(x: np.ndarray, up: int, down: int) -> np.ndarray:
    """``scipy.signal.resample_poly(x, up, down)`` for a 1-D float signal, as float32."""
    if up < 1 or down < 1:
        raise ValueError("up and down must be >= 1")
    g = math.gcd(up, down)
    up, down = up // g, down // g
    x = np.asarray(x, np.float32)
    if x.ndim != 1:
        raise ValueError(f"expected a 1-D signal, got shape {list(x.shape)}")
    if up == down == 1:
        return x.copy()
    h = lowpass_filter(up, down) * up
    half_len = (h.size - 1) // 2
    n_in = x.size
    n_out = -(-n_in * up // down)
    # scipy pads the filter in front so output samples land on the filter's centre.
    n_pre_pad = down - half_len % down
    n_pre_remove = (half_len + n_pre_pad) // down

    # Output m is sum_j h[s - j*up] * x[j] with s = (n_pre_remove + m) * down - n_pre_pad:
    # phase s % up picks a polyphase branch of k taps, applied to x[s//up], x[s//up - 1], ...
    k = -(-h.size // up)
    branches = np.zeros((up, k))
    for phase in range(up):
        taps = h[phase::up]
        branches[phase, : taps.size] = taps
    last = ((n_pre_remove + n_out - 1) * down - n_pre_pad) // up
    padded = np.zeros(k + max(last + 1, n_in), np.float64)
    padded[k : k + n_in] = x
    back = np.arange(k)
    out = np.empty(n_out, np.float32)
    for start in range(0, n_out, _BLOCK):
        m = np.arange(start, min(start + _BLOCK, n_out))
        s = (n_pre_remove + m) * down - n_pre_pad
        newest = s // up + k  # index of x[s // up] in ``padded``
        window = padded[newest[:, None] - back[None, :]]
        out[start : start + m.size] = np.einsum("mi,mi->m", branches[s % up], window)
    return out


def resample(x: np.ndarray, from_rate: int, to_rate: int) -> np.ndarray:
    """``x`` at ``from_rate`` Hz -> ``to_rate`` Hz, as pocket-tts's ``convert_audio``."""
    if from_rate == to_rate:
        return np.asarray(x, np.float32).copy()
    g = math.gcd(int(from_rate), int(to_rate))
    return resample_poly(x, int(to_rate) // g, int(from_rate) // g)
