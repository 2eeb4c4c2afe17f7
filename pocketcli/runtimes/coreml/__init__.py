"""CoreML runtime: FluidAudio's published Pocket TTS packs on macOS (see runtime.py)."""

from pocketcli.runtimes.coreml.predictor import (
    CoreMLPredictor,
    Predictor,
    PredictorFactory,
    TensorDesc,
    coreml_factory,
    coreml_unavailable_reason,
)
from pocketcli.runtimes.coreml.runtime import CoreMLRuntime, CoreMLUnavailable, bundled_config
from pocketcli.runtimes.coreml.units import (
    DEFAULT_UNITS,
    PLACEMENTS,
    PRECISIONS,
    PRESET_ALIASES,
    PRESETS,
    STAGES,
    canonical_placement,
    canonical_precision,
    canonical_preset,
    stage_compute_units,
)

__all__ = [
    "DEFAULT_UNITS",
    "PLACEMENTS",
    "PRECISIONS",
    "PRESETS",
    "PRESET_ALIASES",
    "STAGES",
    "CoreMLPredictor",
    "CoreMLRuntime",
    "CoreMLUnavailable",
    "Predictor",
    "PredictorFactory",
    "TensorDesc",
    "bundled_config",
    "canonical_placement",
    "canonical_precision",
    "canonical_preset",
    "coreml_factory",
    "coreml_unavailable_reason",
    "stage_compute_units",
]
