"""CoreML runtime: FluidAudio's published Pocket TTS packs on macOS (see runtime.py).

Names load on first use, so the registry can read the unit tables (``units``)
without importing the runtime and numpy.
"""

from __future__ import annotations

from pocketcli import lazy

_EXPORTS = {
    "CoreMLPredictor": "predictor",
    "Predictor": "predictor",
    "PredictorFactory": "predictor",
    "TensorDesc": "predictor",
    "coreml_factory": "predictor",
    "coreml_unavailable_reason": "predictor",
    "CoreMLRuntime": "runtime",
    "CoreMLUnavailable": "runtime",
    "bundled_config": "runtime",
    "DEFAULT_UNITS": "units",
    "PLACEMENTS": "units",
    "PRECISIONS": "units",
    "PRESET_ALIASES": "units",
    "PRESETS": "units",
    "STAGES": "units",
    "canonical_placement": "units",
    "canonical_precision": "units",
    "canonical_preset": "units",
    "stage_compute_units": "units",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy.exports(__name__, _EXPORTS)
