"""Compute-unit presets and output discovery, cell by cell against FluidAudio's rules."""

from __future__ import annotations

import pytest

from pocketcli.errors import UserError
from pocketcli.packs.manifest import PackError
from pocketcli.runtimes.coreml import (
    PRESET_ALIASES,
    PRESETS,
    STAGES,
    canonical_preset,
    stage_compute_units,
)
from pocketcli.runtimes.coreml.contract import StateShape
from pocketcli.runtimes.coreml.discovery import discover_layer_keys, discover_mimi_keys
from pocketcli.runtimes.coreml.predictor import TensorDesc
from pocketcli.runtimes.coreml.units import stage_models

A, G, N, C = "ALL", "CPU_AND_GPU", "CPU_AND_NE", "CPU_ONLY"
# FluidAudio's tables (shared/docs/fluidaudio-pockettts.md 2.2), columns in STAGES order:
# conditioner, flowLM, flowDecoder, mimiDecoder, mimiEncoder.
EXPECTED = {
    ("default", "gpu"): (A, A, A, C, G),
    ("default", "ane"): (A, N, A, C, G),
    ("no-ane", "gpu"): (G, G, G, C, G),
    ("no-ane", "ane"): (G, G, G, C, G),
    ("all", "gpu"): (A, A, A, A, A),
    ("cpu-gpu", "ane"): (G, G, G, G, G),
    ("cpu-ane", "gpu"): (N, N, N, N, N),
    ("cpu-only", "ane"): (C, C, C, C, C),
}


@pytest.mark.parametrize(("preset", "placement"), sorted(EXPECTED))
def test_stage_units_follow_fluidaudio(preset: str, placement: str) -> None:
    units = stage_compute_units(preset, placement)
    assert tuple(units[s] for s in STAGES) == EXPECTED[preset, placement]


def test_aliases_and_case() -> None:
    assert dict(PRESET_ALIASES) == {
        "avoid-ane": "no-ane",
        "gpu": "cpu-gpu",
        "ane": "cpu-ane",
        "cpu": "cpu-only",
    }
    for alias, name in PRESET_ALIASES.items():
        assert stage_compute_units(alias.upper(), "gpu") == stage_compute_units(name, "gpu")
    assert canonical_preset(" No-ANE ") == "no-ane"
    assert set(PRESETS) == {"default", "no-ane", "all", "cpu-gpu", "cpu-ane", "cpu-only"}


def test_unknown_preset_is_one_line_listing_the_choices() -> None:
    with pytest.raises(UserError) as info:
        stage_compute_units("fast", "gpu")
    assert "\n" not in str(info.value) and "no-ane" in str(info.value)


def test_models_per_placement_and_precision() -> None:
    assert stage_models("gpu", "fp16")["flowlm"] == "flowlm_step"
    assert stage_models("gpu", "int8")["flowlm"] == "flowlm_stepv2"
    assert stage_models("ane", "int8") == {
        "conditioner": "cond_prefill_ane",
        "flowlm": "flowlm_step_ane",
        "flow_decoder": "flow_decoder_fused",
        "mimi_decoder": "mimi_decoder",
    }


CACHE = (2, 1, 512, 16, 64)


def _descs(*rows: tuple[str, tuple[int, ...]]) -> list[TensorDesc]:
    return [TensorDesc(name, shape, "float32") for name, shape in rows]


def test_layer_keys_sort_by_cache_number_and_trailing_digits() -> None:
    outputs = _descs(
        ("var_2121", (1,)),
        ("new_cache_internal_tensor_assign_2", CACHE),
        ("var_445", (1,)),
        ("new_cache_3_internal_tensor_assign_2", CACHE),
        ("var_2582", (1, 1, 1)),
        ("input", (1, 1, 1024)),
        ("var_864", (1,)),
        ("new_cache_1_internal_tensor_assign_2", CACHE),
    )
    keys = discover_layer_keys("flowlm_step", outputs, 3, CACHE, (1, 1, 1024))
    assert keys.caches == (
        "new_cache_1_internal_tensor_assign_2",
        "new_cache_3_internal_tensor_assign_2",
        "new_cache_internal_tensor_assign_2",
    )
    assert keys.positions == ("var_445", "var_864", "var_2121")  # numerically, not as text
    assert (keys.hidden, keys.eos) == ("input", "var_2582")


def test_layer_keys_need_one_cache_and_position_per_layer() -> None:
    outputs = _descs(("a", CACHE), ("b", CACHE), ("var_1", (1,)))
    with pytest.raises(PackError, match="found 2 cache outputs .* and 1 position"):
        discover_layer_keys("cond_prefill", outputs, 2, CACHE)
    with pytest.raises(PackError, match="one EOS output"):
        discover_layer_keys(
            "flowlm_step",
            _descs(("a", CACHE), ("var_1", (1,)), ("h", (1, 1, 1024))),
            1,
            CACHE,
            (1, 1, 1024),
        )


def test_mimi_keys_walk_the_canonical_order() -> None:
    canonical = [
        StateShape("attn0_cache", (2, 1, 256, 8, 64)),
        StateShape("attn0_offset", (1,)),
        StateShape("attn1_cache", (2, 1, 256, 8, 64)),
        StateShape("attn1_offset", (1,)),
        StateShape("conv0_first", (1,)),
        StateShape("res0_conv1_prev", (1, 128, 0)),
    ]
    inputs = _descs(("latent", (1, 32)), *[(s.name, s.shape) for s in canonical])
    outputs = _descs(
        ("var_900", (1,)),
        ("conv0_first", (1,)),
        ("var_77", (2, 1, 256, 8, 64)),
        ("var_1000", (1, 1, 1920)),
        ("res0_conv1_prev", (1, 128, 0)),
        ("var_120", (2, 1, 256, 8, 64)),
        ("var_95", (1,)),
    )
    keys = discover_mimi_keys("mimi_decoder", inputs, outputs, "latent", (1, 1, 1920), canonical)
    assert keys.audio == "var_1000"
    assert keys.states == {
        "attn0_cache": "var_77",
        "attn0_offset": "var_95",
        "attn1_cache": "var_120",
        "attn1_offset": "var_900",
        "conv0_first": "conv0_first",
        "res0_conv1_prev": "res0_conv1_prev",
    }


def test_mimi_keys_fail_when_a_state_has_no_output() -> None:
    canonical = [StateShape("conv0_prev", (1, 512, 6))]
    inputs = _descs(("latent", (1, 32)), ("conv0_prev", (1, 512, 6)))
    with pytest.raises(PackError, match="no output of shape \\[1, 512, 6\\] left"):
        discover_mimi_keys(
            "mimi_decoder",
            inputs,
            _descs(("var_1", (1, 1, 1920))),
            "latent",
            (1, 1, 1920),
            canonical,
        )


def test_mimi_states_of_the_released_decoder_are_fluidaudios_24() -> None:
    """The v2 schema table (shared/docs/fluidaudio-pockettts.md 4.8), from english.yaml."""
    from pocketcli.runtimes.coreml import bundled_config
    from pocketcli.runtimes.coreml.contract import mimi_states

    table = [
        ("upsample_partial", (1, 512, 16)),
        ("attn0_cache", (2, 1, 256, 8, 64)),
        ("attn0_offset", (1,)),
        ("attn1_cache", (2, 1, 256, 8, 64)),
        ("attn1_offset", (1,)),
        ("conv0_prev", (1, 512, 6)),
        ("conv0_first", (1,)),
        ("convtr0_partial", (1, 256, 6)),
        ("res0_conv0_prev", (1, 256, 2)),
        ("res0_conv0_first", (1,)),
        ("res0_conv1_prev", (1, 128, 0)),
        ("res0_conv1_first", (1,)),
        ("convtr1_partial", (1, 128, 5)),
        ("res1_conv0_prev", (1, 128, 2)),
        ("res1_conv0_first", (1,)),
        ("res1_conv1_prev", (1, 64, 0)),
        ("res1_conv1_first", (1,)),
        ("convtr2_partial", (1, 64, 4)),
        ("res2_conv0_prev", (1, 64, 2)),
        ("res2_conv0_first", (1,)),
        ("res2_conv1_prev", (1, 32, 0)),
        ("res2_conv1_first", (1,)),
        ("conv_final_prev", (1, 64, 2)),
        ("conv_final_first", (1,)),
    ]
    states = mimi_states(bundled_config("english").mimi)
    assert [(s.name, s.shape) for s in states] == table
    assert [s.name for s in states if s.pass_through] == [
        n for n, shape in table if n.endswith("_first") or 0 in shape
    ]
