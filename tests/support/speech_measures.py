"""Pitch and timbre measures for time-stretched speech (issue 36).

``median_f0`` is YIN (de Cheveigne & Kawahara 2002: the cumulative-mean-normalised
difference function, its first dip under a threshold, parabolic interpolation) on
40 ms windows every 10 ms, over voiced frames only; ``tests/unit/audio/test_stretch.py``
checks it on tones and on a glottal-like pulse train of known F0, and the benchmark
prints librosa's pyin beside it where librosa is installed. ``spectral_centroid`` is
the energy-weighted mean frequency over frames loud enough to be speech.
"""

from __future__ import annotations

import numpy as np

FMIN = 60.0
FMAX = 400.0
YIN_THRESHOLD = 0.15


def _frames(x: np.ndarray, size: int, hop: int) -> np.ndarray:
    if len(x) < size:
        return np.zeros((0, size))
    n = 1 + (len(x) - size) // hop
    idx = np.arange(size)[None, :] + hop * np.arange(n)[:, None]
    return x[idx].astype(np.float64)


def f0_track(x: np.ndarray, rate: int) -> np.ndarray:
    """F0 in Hz per 10 ms frame, NaN where unvoiced or silent."""
    size = int(0.04 * rate)
    hop = int(0.01 * rate)
    frames = _frames(np.asarray(x, np.float64), size, hop)
    if not len(frames):
        return np.zeros(0)
    energy = (frames**2).mean(axis=1)
    loud = energy > 10 ** (-40 / 10) * energy.max()  # within 40 dB of the loudest frame
    w = size // 2  # integration window; lags up to size - w
    max_lag = min(int(rate / FMIN) + 2, size - w)
    min_lag = int(rate / FMAX)
    # d(tau) = sum_j (x_j - x_{j+tau})^2 over j < w, for every lag at once
    d = np.empty((len(frames), max_lag))
    head = frames[:, :w]
    for tau in range(max_lag):
        diff = head - frames[:, tau : tau + w]
        d[:, tau] = (diff * diff).sum(axis=1)
    cum = np.cumsum(d[:, 1:], axis=1)
    cmnd = np.ones_like(d)
    cmnd[:, 1:] = d[:, 1:] * np.arange(1, max_lag)[None, :] / np.maximum(cum, 1e-20)
    out = np.full(len(frames), np.nan)
    for i in np.nonzero(loud)[0]:
        row = cmnd[i]
        below = np.nonzero(row[min_lag:] < YIN_THRESHOLD)[0]
        if not len(below):
            continue
        tau = min_lag + below[0]
        while tau + 1 < max_lag and row[tau + 1] < row[tau]:
            tau += 1  # down to the bottom of the dip
        if 0 < tau < max_lag - 1:
            a, b, c = row[tau - 1], row[tau], row[tau + 1]
            den = a - 2 * b + c
            shift = 0.5 * (a - c) / den if den > 0 else 0.0
        else:
            shift = 0.0
        out[i] = rate / (tau + shift)
    return out


def median_f0(x: np.ndarray, rate: int) -> float:
    """The median F0 of the voiced frames (NaN when none is voiced)."""
    track = f0_track(x, rate)
    voiced = track[np.isfinite(track)]
    return float(np.median(voiced)) if len(voiced) else float("nan")


def f0_shift(before: np.ndarray, after: np.ndarray, rate: int) -> float:
    """How far the median F0 moved, |after / before - 1|, octave errors aside.

    A tracker's octave errors (a frame read at twice or half its pitch) make a
    median of speech's F0 bimodal and unstable, and no time-stretcher moves pitch
    by an octave: each frame's F0 is folded into the half-octave either side of
    ``before``'s median before the medians are taken. A real shift of less than
    a half octave (a resampler's 1.3x or 0.8x) is measured in full.
    """
    return folded_shift(f0_track(before, rate), f0_track(after, rate))


def folded_shift(before: np.ndarray, after: np.ndarray) -> float:
    """``f0_shift`` for two F0 tracks of any tracker (NaN: unvoiced)."""
    before, after = before[np.isfinite(before)], after[np.isfinite(after)]
    if not len(before) or not len(after):
        return float("nan")
    ref = float(np.median(before))
    medians = []
    for track in (before, after):
        octaves = np.log2(track / ref)
        medians.append(float(np.median(octaves - np.round(octaves))))
    return abs(2.0 ** (medians[1] - medians[0]) - 1.0)


def spectral_centroid(x: np.ndarray, rate: int) -> float:
    """Energy-weighted mean frequency (Hz) of the frames within 40 dB of the loudest."""
    size = 1024
    frames = _frames(np.asarray(x, np.float64), size, size // 4) * np.hanning(size)
    power = np.abs(np.fft.rfft(frames, axis=1)) ** 2
    energy = power.sum(axis=1)
    loud = energy > 1e-4 * energy.max()
    freqs = np.fft.rfftfreq(size, 1.0 / rate)
    p = power[loud]
    return float((p * freqs[None, :]).sum() / p.sum())


def relative_shift(before: float, after: float) -> float:
    """|after / before - 1|."""
    return abs(after / before - 1.0)
