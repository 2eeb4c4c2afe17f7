"""Opening a pack's models for one placement and checking them against the contracts.

Everything that can be known before the first prediction is checked here:
every input's name, shape and that nothing is missing or extra; the output
roles found by FluidAudio's discovery rules. So a wrong or truncated pack
fails at load with the model and tensor named, and the synthesis code can
index outputs without further checks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pocketcli.config import ModelConfig
from pocketcli.packs.manifest import PackError
from pocketcli.runtimes.coreml import contract as c
from pocketcli.runtimes.coreml.discovery import (
    LayerKeys,
    MimiKeys,
    discover_layer_keys,
    discover_mimi_keys,
)
from pocketcli.runtimes.coreml.predictor import Predictor, PredictorFactory, TensorDesc
from pocketcli.runtimes.coreml.units import stage_models


@dataclass(frozen=True)
class PackModels:
    conditioner: Predictor
    flowlm: Predictor
    flow_decoder: Predictor
    mimi: Predictor
    split_caches: bool  # ane: K and V in separate rank-4 inputs
    slots: int  # KV cache slots (512 in FluidAudio's packs)
    rows: int  # rows per conditioner call (256)
    cond_keys: LayerKeys  # output names, in the layout of the inputs they replace
    flowlm_keys: LayerKeys
    flow_output: str
    mimi_keys: MimiKeys
    mimi_states: dict[str, tuple[int, ...]]  # state input -> shape


def require_inputs(model: Predictor, expected: Mapping[str, tuple[int, ...]], what: str) -> None:
    """Exactly these inputs with exactly these shapes, or a PackError naming the first misfit."""
    have = {d.name: d for d in model.inputs}
    missing = [n for n in expected if n not in have]
    extra = [n for n in have if n not in expected]
    if missing or extra:
        raise PackError(
            f"{model.label}: inputs do not match {what} (missing {missing}, unexpected {extra})"
        )
    for name, shape in expected.items():
        got = have[name].shape
        if got != tuple(shape):
            raise PackError(
                f"{model.label}: input {name!r} has shape"
                f" {list(got) if got is not None else 'unknown'}, expected"
                f" {list(shape)} for {what}"
            )


def require_outputs(model: Predictor, expected: Mapping[str, tuple[int, ...]]) -> None:
    have = {d.name: d for d in model.outputs}
    for name, shape in expected.items():
        if name not in have:
            raise PackError(f"{model.label}: output {name!r} is missing")
        if have[name].shape not in (None, tuple(shape)):
            raise PackError(
                f"{model.label}: output {name!r} has shape"
                f" {list(have[name].shape or ())}, expected {list(shape)}"
            )


def _dim(model: Predictor, name: str, axis: int) -> int:
    desc = next((d for d in model.inputs if d.name == name), None)
    if desc is None or desc.shape is None or len(desc.shape) <= axis:
        raise PackError(f"{model.label}: input {name!r} is missing or has no fixed shape")
    return desc.shape[axis]


def _split_keys(layers: int, hidden: bool) -> LayerKeys:
    """The explicit output names of the ane models (K caches; V names follow the same i)."""
    return LayerKeys(
        tuple(f"new_k_cache{i}" for i in range(layers)),
        tuple(f"new_position{i}" for i in range(layers)),
        "transformer_out" if hidden else None,
        "is_eos" if hidden else None,
    )


def open_pack_models(
    pack_dir: Path,
    cfg: ModelConfig,
    placement: str,
    precision: str,
    units: Mapping[str, str],
    factory: PredictorFactory,
) -> PackModels:
    names = stage_models(placement, precision)
    opened = {stage: factory(pack_dir, model, units[stage]) for stage, model in names.items()}
    dims = c.FlowDims.of(cfg)
    split = placement == "ane"
    what = f"a {dims.layers}-layer model with {dims.kv_heads} KV heads of {dims.head_dim}"
    cond, flowlm = opened["conditioner"], opened["flowlm"]
    slots = _dim(cond, "k_cache0" if split else "cache0", 1 if split else 2)
    rows = _dim(cond, "conditioning", 1)
    require_inputs(cond, c.conditioner_inputs(dims, slots, rows, split), what)
    require_inputs(flowlm, c.flowlm_inputs(dims, slots, split), what)
    hidden = (1, 1, dims.cond_dim)
    if split:
        cache = dims.cache(slots, True)
        layer_outputs = {
            n: s
            for i in range(dims.layers)
            for n, s in (
                (f"new_k_cache{i}", cache),
                (f"new_v_cache{i}", cache),
                (f"new_position{i}", (1,)),
            )
        }
        require_outputs(cond, layer_outputs)
        require_outputs(flowlm, {**layer_outputs, "transformer_out": hidden, "is_eos": (1, 1, 1)})
        cond_keys, flowlm_keys = _split_keys(dims.layers, False), _split_keys(dims.layers, True)
    else:
        cache = dims.cache(slots, False)
        cond_keys = discover_layer_keys(cond.label, cond.outputs, dims.layers, cache)
        flowlm_keys = discover_layer_keys(flowlm.label, flowlm.outputs, dims.layers, cache, hidden)

    flow = opened["flow_decoder"]
    require_inputs(flow, c.flow_decoder_inputs(dims), what)
    flow_output = _flow_output(flow, dims.latent)

    mimi = opened["mimi_decoder"]
    mimi_states, mimi_keys = _mimi_contract(mimi, cfg)
    return PackModels(
        cond,
        flowlm,
        flow,
        mimi,
        split,
        slots,
        rows,
        cond_keys,
        flowlm_keys,
        flow_output,
        mimi_keys,
        mimi_states,
    )


def _flow_output(flow: Predictor, latent: int) -> str:
    """``latent_final``, or the sole output under another name (as FluidAudio accepts)."""
    names = [d.name for d in flow.outputs]
    name = (
        c.FUSED_DECODER_OUTPUT
        if c.FUSED_DECODER_OUTPUT in names
        else (names[0] if len(names) == 1 else None)
    )
    if name is None:
        raise PackError(f"{flow.label}: no output {c.FUSED_DECODER_OUTPUT!r} among {names}")
    require_outputs(flow, {name: (1, latent)})
    return name


def _mimi_contract(
    mimi: Predictor, cfg: ModelConfig
) -> tuple[dict[str, tuple[int, ...]], MimiKeys]:
    canonical = c.mimi_states(cfg.mimi)
    expected = {s.name: s.shape for s in canonical}
    inputs: dict[str, TensorDesc] = {d.name: d for d in mimi.inputs}
    latent = inputs.get(c.MIMI_LATENT_INPUT)
    if latent is None or latent.shape != (1, cfg.flow_lm.latent_dim):
        raise PackError(
            f"{mimi.label}: expected input {c.MIMI_LATENT_INPUT!r} of shape"
            f" [1, {cfg.flow_lm.latent_dim}]"
        )
    states: dict[str, tuple[int, ...]] = {}
    for name, desc in inputs.items():
        if name == c.MIMI_LATENT_INPUT:
            continue
        if name not in expected:
            raise PackError(
                f"{mimi.label}: unexpected input {name!r} (not a Mimi state of"
                " FluidAudio's decoder)"
            )
        if desc.shape != expected[name]:
            raise PackError(
                f"{mimi.label}: state {name!r} has shape"
                f" {list(desc.shape or ())}, expected {list(expected[name])} for"
                " this model's Mimi decoder"
            )
        states[name] = desc.shape
    audio = (1, 1, cfg.mimi.samples_per_frame)
    keys = discover_mimi_keys(
        mimi.label, mimi.inputs, mimi.outputs, c.MIMI_LATENT_INPUT, audio, canonical
    )
    return states, keys
