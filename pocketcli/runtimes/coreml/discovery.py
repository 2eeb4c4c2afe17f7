"""Finding auto-named Core ML outputs the way FluidAudio does.

The rank-5 conditioner/FlowLM models and the Mimi decoder were converted
without output names, so Core ML called them ``var_NNN`` or
``new_cache_K_internal_tensor_assign_2``, different in every conversion.
FluidAudio (``PocketTtsLayerKeys.discover`` and ``PocketTtsMimiKeys.discover``)
finds them by shape and by the numbers in their names; these functions apply
the same rules, so a pack FluidAudio can read is read here the same way and a
pack it would reject is rejected here too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pocketcli.packs.manifest import PackError
from pocketcli.runtimes.coreml.contract import StateShape
from pocketcli.runtimes.coreml.predictor import TensorDesc

_CACHE_NUMBER = re.compile(r"^new_cache_(\d+)_")
_TRAILING_NUMBER = re.compile(r"(\d+)$")
_LAST = float("inf")


@dataclass(frozen=True)
class LayerKeys:
    """Output names per layer (index i = layer i), plus hidden/EOS for a FlowLM."""

    caches: tuple[str, ...]
    positions: tuple[str, ...]
    hidden: str | None = None
    eos: str | None = None


def _cache_order(name: str) -> tuple[float, str]:
    m = _CACHE_NUMBER.match(name)
    return ((int(m.group(1)) - 1) // 2 if m else _LAST), name


def _trailing_order(name: str) -> tuple[float, str]:
    m = _TRAILING_NUMBER.search(name)
    return (int(m.group(1)) if m else _LAST), name


def _shape_of(model: str, desc: TensorDesc) -> tuple[int, ...]:
    if desc.shape is None:
        raise PackError(
            f"{model}: output {desc.name!r} has no shape in the model description,"
            " so its role cannot be discovered"
        )
    return desc.shape


def discover_layer_keys(
    model: str,
    outputs: Iterable[TensorDesc],
    layers: int,
    cache_shape: Sequence[int],
    hidden_shape: Sequence[int] | None = None,
) -> LayerKeys:
    """Rank-5 cond_prefill (``hidden_shape=None``) or flowlm_step outputs.

    Shapes bucket the outputs: caches, ``[1]`` positions, ``hidden_shape``
    hidden state, ``[1, 1, 1]`` EOS. Caches sort by the layer ``(K - 1) // 2``
    of a ``new_cache_K_`` prefix, positions by their trailing number; names
    without a number sort last, ties by name.
    """
    caches, positions, hidden, eos = [], [], [], []
    for desc in outputs:
        shape = _shape_of(model, desc)
        if shape == tuple(cache_shape):
            caches.append(desc.name)
        elif shape == (1,):
            positions.append(desc.name)
        elif hidden_shape is not None and shape == tuple(hidden_shape):
            hidden.append(desc.name)
        elif hidden_shape is not None and shape == (1, 1, 1):
            eos.append(desc.name)
    if len(caches) != layers or len(positions) != len(caches):
        raise PackError(
            f"{model}: found {len(caches)} cache outputs of shape"
            f" {list(cache_shape)} and {len(positions)} position outputs, expected"
            f" {layers} of each (is this pack for another model?)"
        )
    keys = LayerKeys(
        tuple(sorted(caches, key=_cache_order)), tuple(sorted(positions, key=_trailing_order))
    )
    if hidden_shape is None:
        return keys
    if len(hidden) != 1 or len(eos) != 1:
        raise PackError(
            f"{model}: expected one hidden output of shape {list(hidden_shape)} and"
            f" one EOS output of shape [1, 1, 1], found {len(hidden)} and {len(eos)}"
        )
    return LayerKeys(keys.caches, keys.positions, hidden[0], eos[0])


@dataclass(frozen=True)
class MimiKeys:
    audio: str
    states: dict[str, str]  # state input name -> output name carrying its next value


def discover_mimi_keys(
    model: str,
    inputs: Iterable[TensorDesc],
    outputs: Iterable[TensorDesc],
    latent_input: str,
    audio_shape: Sequence[int],
    canonical: Sequence[StateShape],
) -> MimiKeys:
    """Maps each state input to its output, FluidAudio's way.

    The audio is the ``audio_shape`` output. An output named like an input is
    that input's pass-through. The other outputs are bucketed by shape and
    sorted by trailing number; walking the canonical state order, each state
    takes the first output left in its shape's bucket. A canonical name the
    model lacks is skipped; a state left without an output is an error.
    """
    in_descs = {d.name: d for d in inputs if d.name != latent_input}
    outs = list(outputs)
    audio = [d.name for d in outs if _shape_of(model, d) == tuple(audio_shape)]
    if len(audio) != 1:
        raise PackError(
            f"{model}: expected one audio output of shape {list(audio_shape)}, found {len(audio)}"
        )
    buckets: dict[tuple[int, ...], list[str]] = {}
    for d in sorted(outs, key=lambda d: _trailing_order(d.name)):
        if d.name != audio[0] and d.name not in in_descs:
            buckets.setdefault(_shape_of(model, d), []).append(d.name)
    out_names = {d.name for d in outs}
    states: dict[str, str] = {}
    for state in canonical:
        desc = in_descs.get(state.name)
        if desc is None:
            continue
        if state.name in out_names:
            states[state.name] = state.name
            continue
        bucket = buckets.get(desc.shape or (), [])
        if not bucket:
            raise PackError(
                f"{model}: no output of shape {list(desc.shape or ())} left for"
                f" state {state.name!r}"
            )
        states[state.name] = bucket.pop(0)
    unknown = sorted(set(in_descs) - set(states))
    if unknown:
        raise PackError(f"{model}: unexpected state inputs {unknown}")
    return MimiKeys(audio[0], states)
