"""FluidAudio's output chain, checked against a per-sample reading of its definition."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pocketcli.audio.postprocess import OutputChain, apply_output_chain


def _spec_chain(x: np.ndarray, rate: int = 24_000) -> np.ndarray:
    """One-pole 80 Hz high-pass (first sample untouched), then the RBJ -3 dB shelf at 6 kHz."""
    rc, dt = 1 / (2 * math.pi * 80), 1 / rate
    a = rc / (rc + dt)
    y = x.astype(np.float64).copy()
    prev_x, prev_y = float(x[0]), 0.0
    for n in range(1, len(x)):
        prev_y = a * (prev_y + float(x[n]) - prev_x)
        prev_x = float(x[n])
        y[n] = prev_y
    g = 10 ** (-3 / 40)
    w = 2 * math.pi * 6000 / rate
    al = math.sin(w) / (2 * 0.707)
    c, r = math.cos(w), 2 * math.sqrt(g) * al
    b0, b1, b2 = (
        g * ((g + 1) + (g - 1) * c + r),
        -2 * g * ((g - 1) + (g + 1) * c),
        g * ((g + 1) + (g - 1) * c - r),
    )
    a0, a1, a2 = (g + 1) - (g - 1) * c + r, 2 * ((g - 1) - (g + 1) * c), (g + 1) - (g - 1) * c - r
    b0, b1, b2, a1, a2 = b0 / a0, b1 / a0, b2 / a0, a1 / a0, a2 / a0
    z1 = z2 = 0.0
    out = np.zeros_like(y)
    for n, v in enumerate(y):  # transposed direct form II
        o = b0 * v + z1
        z1 = b1 * v - a1 * o + z2
        z2 = b2 * v - a2 * o
        out[n] = o
    return out


def test_chain_matches_its_definition_whole_and_streamed() -> None:
    x = (np.random.default_rng(0).standard_normal(9000) * 0.2).astype(np.float32)
    expected = _spec_chain(x)
    whole = OutputChain(24_000).process(x)
    chain = OutputChain(24_000)
    streamed = np.concatenate([chain.process(x[i : i + 1920]) for i in range(0, len(x), 1920)])
    assert np.abs(whole - expected).max() < 1e-6
    assert np.abs(streamed - expected).max() < 1e-6


@pytest.mark.parametrize("size", [1, 2, 63, 64, 65, 777])
def test_any_block_size_streams_the_same_samples(size: int) -> None:
    """The recursions run 64 samples at a time inside a call; calls may cut anywhere."""
    x = (np.random.default_rng(1).standard_normal(3000) * 0.3).astype(np.float32)
    chain = OutputChain(24_000)
    streamed = np.concatenate([chain.process(x[i : i + size]) for i in range(0, len(x), size)])
    assert np.abs(streamed - _spec_chain(x)).max() < 1e-6


def test_rumble_cut_sibilance_shelved_and_peak_normalised() -> None:
    t = np.arange(48_000) / 24_000
    x = sum(0.1 * np.sin(2 * np.pi * f * t) for f in (20, 1000, 10_000)).astype(np.float32)
    y = apply_output_chain(x, 24_000)
    assert np.abs(y).max() == np.float32(1.0)
    spectrum = np.abs(np.fft.rfft(y[24_000:]))
    freqs = np.fft.rfftfreq(24_000, 1 / 24_000)

    def level(f: int) -> float:
        return float(spectrum[freqs == f][0])

    # One pole at 80 Hz: |H(20 Hz)| = 20 / sqrt(20^2 + 80^2) ~ 0.24; the shelf: -3 dB ~ 0.71.
    assert 0.2 < level(20) / level(1000) < 0.3
    assert 0.66 < level(10_000) / level(1000) < 0.76
