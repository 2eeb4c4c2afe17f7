"""Our numpy resampler against scipy's ``resample_poly``, which pocket-tts uses.

scipy (a dependency of pocket-tts, in the test extra) is the oracle; the
package itself never imports it.
"""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

from pocketcli.audio.resample import resample, resample_poly

signal = pytest.importorskip("scipy.signal")

RATES = [8_000, 11_025, 16_000, 22_050, 32_000, 44_100, 48_000, 88_200, 96_000, 24_000, 44_056]


@pytest.mark.parametrize("rate", RATES)
@pytest.mark.parametrize("n", [1, 7, 1000, 48_011])
def test_equals_resample_poly(rate: int, n: int) -> None:
    rng = np.random.default_rng(rate + n)
    x = (0.3 * rng.standard_normal(n)).astype(np.float32)
    g = math.gcd(rate, 24_000)
    expected = signal.resample_poly(x, 24_000 // g, rate // g)
    ours = resample(x, rate, 24_000)
    assert ours.dtype == np.float32 and ours.shape == expected.shape
    assert np.abs(ours - expected).max() <= 1e-6


@pytest.mark.parametrize(("up", "down"), [(1, 2), (2, 1), (3, 2), (80, 147), (160, 147), (6, 4)])
def test_any_ratio_and_its_filter(up: int, down: int) -> None:
    x = np.sin(np.arange(5000) * 0.05).astype(np.float32)
    assert np.abs(resample_poly(x, up, down) - signal.resample_poly(x, up, down)).max() <= 1e-6


def test_scipy_is_not_imported_at_run_time() -> None:
    code = (
        "import sys, numpy as np\n"
        "from pocketcli.voices.prompt import prepare_prompt\n"
        "x = np.sin(np.arange(48_000 * 2) * 0.03).astype(np.float32) * 0.3\n"
        "prepare_prompt(x, 44_100, 24_000)\n"
        "print('scipy' in sys.modules)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="up and down"):
        resample_poly(np.zeros(4, np.float32), 0, 1)
    with pytest.raises(ValueError, match="1-D"):
        resample_poly(np.zeros((4, 2), np.float32), 2, 1)
