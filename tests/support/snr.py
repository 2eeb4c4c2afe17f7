"""Signal-to-noise ratio of an approximation (quantised weights) against its reference."""

from __future__ import annotations

import numpy as np


def snr_db(reference: np.ndarray, approximation: np.ndarray) -> float:
    """10 log10(energy of ``reference`` / energy of the difference), in dB."""
    reference = np.asarray(reference, np.float64)
    diff = np.asarray(approximation, np.float64) - reference
    assert reference.shape == diff.shape
    noise = float(np.sum(diff**2))
    return float("inf") if noise == 0 else 10 * np.log10(float(np.sum(reference**2)) / noise)
