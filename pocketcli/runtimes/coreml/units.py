"""Which Core ML model runs where: placements, precisions and compute-unit presets.

The tables are FluidAudio's (``PocketTtsModelStore.loadIfNeeded`` and the
``--compute-units`` mapping of its PR #893), kept as data so a test can
compare them cell by cell and the CLI can list the accepted values. Why the
defaults look the way they do (from FluidAudio's code and PRs):

* conditioner and FlowLM of the ``gpu`` packs are rank-5 KV-cache scatters
  that cannot compile for the Neural Engine, so ``ALL`` lands them on the GPU;
* ``flow_decoder_fused`` is the one model that runs on the Neural Engine;
* the Mimi decoder feeds fp16 streaming state back into itself; on the
  Neural Engine that drifts into audible beeps, so it stays on the CPU;
* on an M1 Max (macOS 26.6.2) ``flow_decoder_fused`` on the Neural Engine
  aborts the process (FluidAudio issue #881): ``no-ane`` is the way out.
"""

from __future__ import annotations

from types import MappingProxyType

from pocketcli.errors import UserError

STAGES = ("conditioner", "flowlm", "flow_decoder", "mimi_decoder", "mimi_encoder")
PLACEMENTS = ("gpu", "ane")
PRECISIONS = ("fp16", "int8")
DEFAULT_PLACEMENT, DEFAULT_PRECISION = PLACEMENTS[0], PRECISIONS[0]
DEFAULT_PRESET = "default"  # FluidAudio's per-stage defaults (DEFAULT_UNITS)
# coremltools.ComputeUnit member names.
UNITS = ("ALL", "CPU_AND_GPU", "CPU_AND_NE", "CPU_ONLY")

# Per-stage defaults by placement (FluidAudio HEAD == POST-893 defaults).
DEFAULT_UNITS: MappingProxyType[str, MappingProxyType[str, str]] = MappingProxyType(
    {
        "gpu": MappingProxyType(
            {
                "conditioner": "ALL",
                "flowlm": "ALL",
                "flow_decoder": "ALL",
                "mimi_decoder": "CPU_ONLY",
                "mimi_encoder": "CPU_AND_GPU",
            }
        ),
        "ane": MappingProxyType(
            {
                "conditioner": "ALL",
                "flowlm": "CPU_AND_NE",
                "flow_decoder": "ALL",
                "mimi_decoder": "CPU_ONLY",
                "mimi_encoder": "CPU_AND_GPU",
            }
        ),
    }
)


def _uniform(unit: str) -> MappingProxyType[str, str]:
    return MappingProxyType(dict.fromkeys(STAGES, unit))


# ``--compute-units`` presets; None = the placement's defaults.
PRESETS: MappingProxyType[str, MappingProxyType[str, str] | None] = MappingProxyType(
    {
        "default": None,
        "no-ane": MappingProxyType(
            {
                "conditioner": "CPU_AND_GPU",
                "flowlm": "CPU_AND_GPU",
                "flow_decoder": "CPU_AND_GPU",
                "mimi_decoder": "CPU_ONLY",
                "mimi_encoder": "CPU_AND_GPU",
            }
        ),
        "all": _uniform("ALL"),
        "cpu-gpu": _uniform("CPU_AND_GPU"),
        "cpu-ane": _uniform("CPU_AND_NE"),
        "cpu-only": _uniform("CPU_ONLY"),
    }
)
PRESET_ALIASES = MappingProxyType(
    {
        "avoid-ane": "no-ane",
        "gpu": "cpu-gpu",
        "ane": "cpu-ane",
        "cpu": "cpu-only",
    }
)

# FlowLM file per precision (``.gpu`` only; ``.ane`` has a single FlowLM).
FLOWLM_MODELS = MappingProxyType({"fp16": "flowlm_step", "int8": "flowlm_stepv2"})


def canonical_preset(name: str) -> str:
    """A preset or alias (any case) -> its canonical name, else a one-line UserError."""
    key = name.strip().lower()
    key = PRESET_ALIASES.get(key, key)
    if key not in PRESETS:
        raise UserError(
            f"unknown compute units {name!r}; choose one of"
            f" {', '.join(PRESETS)} (aliases: {', '.join(PRESET_ALIASES)})"
        )
    return key


def canonical_placement(name: str) -> str:
    key = name.strip().lower()
    if key == "ane-state":
        raise UserError(
            "placement 'ane-state' needs pocket_state.mlmodelc, which FluidAudio"
            " has not published; use the gpu or ane placement"
        )
    if key not in PLACEMENTS:
        raise UserError(f"unknown placement {name!r}; choose one of {', '.join(PLACEMENTS)}")
    return key


def canonical_precision(name: str) -> str:
    key = name.strip().lower()
    if key not in PRECISIONS:
        raise UserError(f"unknown CoreML precision {name!r}; choose one of {', '.join(PRECISIONS)}")
    return key


def stage_compute_units(preset: str, placement: str) -> dict[str, str]:
    """``{stage: coremltools ComputeUnit name}`` for a preset under a placement."""
    chosen = PRESETS[canonical_preset(preset)]
    return dict(DEFAULT_UNITS[canonical_placement(placement)] if chosen is None else chosen)


def stage_models(placement: str, precision: str) -> dict[str, str]:
    """``{stage: model name}`` (no extension) a placement loads for synthesis.

    ``precision`` only matters for ``gpu``, as in FluidAudio (the ``ane``
    FlowLM exists in one precision).
    """
    placement = canonical_placement(placement)
    if placement == "ane":
        return {
            "conditioner": "cond_prefill_ane",
            "flowlm": "flowlm_step_ane",
            "flow_decoder": "flow_decoder_fused",
            "mimi_decoder": "mimi_decoder",
        }
    return {
        "conditioner": "cond_prefill",
        "flowlm": FLOWLM_MODELS[canonical_precision(precision)],
        "flow_decoder": "flow_decoder_fused",
        "mimi_decoder": "mimi_decoder",
    }
