"""Tiny real Core ML models (``.mlpackage``) with FluidAudio's interfaces, built with MIL.

Their arithmetic is trivial; what matters is the interface: input and output
names (auto-style ones where FluidAudio's converter left them unnamed),
shapes and dtypes, as coremltools writes them into a real model spec. Built
on any OS with coremltools (``ct.convert`` works on Linux; prediction only
on macOS).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from pocketcli.config import ModelConfig
from pocketcli.runtimes.coreml import contract as c
from pocketcli.runtimes.coreml.predictor import TensorDesc
from tests.support.twins.fluid_twin_flowlm import cache_output_name

logging.getLogger("coremltools").setLevel(logging.ERROR)
ct: Any = __import__("coremltools")
from coremltools.converters.mil import Builder as mb  # noqa: E402
from coremltools.converters.mil.mil import Function, Program, types  # noqa: E402

Spec = dict[str, tuple[tuple[int, ...], str]]  # name -> (shape, "fp32" | "fp16")
_TYPES = {"fp32": types.fp32, "fp16": types.fp16}


def save_mlpackage(path: Path, inputs: Spec, body: Callable[[dict[str, Any]], list[Any]]) -> Path:
    """Converts a one-function MIL program and saves it as ``path`` (an ``.mlpackage``)."""
    placeholders = {
        n: mb.placeholder(shape=shape, dtype=_TYPES[dt]) for n, (shape, dt) in inputs.items()
    }
    with Function(placeholders, opset_version=ct.target.iOS17) as func:
        func.set_outputs(body(func.inputs))
    program = Program()
    program.add_function("main", func)
    model = ct.convert(
        program,
        convert_to="mlprogram",
        compute_precision=ct.precision.FLOAT16,
        minimum_deployment_target=ct.target.iOS17,
    )
    model.save(str(path))
    return path


def _same(x: Any, name: str) -> Any:
    """A new tensor equal to ``x`` under the given output name."""
    return mb.identity(x=x, name=name)


def _layer_outputs(v: dict[str, Any], layers: int, position_base: int, added: float) -> list[Any]:
    outs = []
    for i in range(layers):
        outs.append(_same(v[f"cache{i}"], cache_output_name(i, layers)))
        outs.append(
            mb.add(x=v[f"position{i}"], y=np.float32(added), name=f"var_{position_base + 419 * i}")
        )
    return outs[::-1]  # not in layer order


def build_gpu_specs(
    directory: Path,
    cfg: ModelConfig,
    *,
    head_dim_override: int | None = None,
    flow_fp16: bool = True,
    only: tuple[str, ...] = ("cond_prefill", "flowlm_step", "flow_decoder_fused", "mimi_decoder"),
) -> None:
    """cond_prefill, flowlm_step, flow_decoder_fused and mimi_decoder (or ``only`` some)."""
    dims = c.FlowDims.of(cfg)
    cache = (2, 1, c.KV_SLOTS, dims.kv_heads, dims.head_dim)
    layer_in: Spec = {}
    for i in range(dims.layers):
        shape = (
            cache
            if head_dim_override is None or i != dims.layers - 1
            else (*cache[:-1], head_dim_override)
        )
        layer_in[f"cache{i}"] = (shape, "fp32")
        layer_in[f"position{i}"] = ((1,), "fp32")

    if "cond_prefill" in only:
        save_mlpackage(
            directory / "cond_prefill.mlpackage",
            {
                "conditioning": ((1, c.PREFILL_ROWS, dims.d_model), "fp32"),
                "valid_len": ((1,), "fp32"),
                **layer_in,
            },
            lambda v: _layer_outputs(v, dims.layers, 445, 1.0),
        )

    def step(v: dict[str, Any]) -> list[Any]:
        h = mb.reduce_sum(x=v["sequence"], axes=[2], keep_dims=True)  # [1, 1, 1]
        hidden = mb.tile(x=h, reps=[1, 1, dims.cond_dim], name="var_2570")
        eos = mb.add(x=h, y=np.float32(0.0), name="var_2582")
        return [eos, *_layer_outputs(v, dims.layers, 458, 1.0), hidden]

    if "flowlm_step" in only:
        save_mlpackage(
            directory / "flowlm_step.mlpackage",
            {
                "sequence": ((1, 1, dims.latent), "fp32"),
                "bos_emb": ((dims.latent,), "fp32"),
                **layer_in,
            },
            step,
        )

    flow_dt = "fp16" if flow_fp16 else "fp32"
    if "flow_decoder_fused" in only:
        save_mlpackage(
            directory / "flow_decoder_fused.mlpackage",
            {
                "transformer_out": ((1, dims.cond_dim), flow_dt),
                "latent_init": ((1, dims.latent), flow_dt),
            },
            lambda v: [
                mb.add(
                    x=v["latent_init"],
                    y=np.float16(1.0) if flow_fp16 else np.float32(1.0),
                    name="latent_final",
                )
            ],
        )

    states = c.mimi_states(cfg.mimi)

    def mimi(v: dict[str, Any]) -> list[Any]:
        s = mb.reduce_sum(x=v["latent"], axes=[1], keep_dims=True)  # [1, 1]
        audio = mb.reshape(
            x=mb.tile(x=s, reps=[1, cfg.mimi.samples_per_frame]),
            shape=[1, 1, cfg.mimi.samples_per_frame],
            name="var_9999",
        )
        outs = [audio]
        for n, state in enumerate(states):
            if state.pass_through:
                outs.append(v[state.name])
            else:
                outs.append(mb.add(x=v[state.name], y=np.float32(1.0), name=f"var_{400 + 23 * n}"))
        return outs[1::2] + outs[0::2]

    if "mimi_decoder" in only:
        save_mlpackage(
            directory / "mimi_decoder.mlpackage",
            {"latent": ((1, dims.latent), "fp32"), **{s.name: (s.shape, "fp32") for s in states}},
            mimi,
        )


def metadata_json(inputs: tuple[TensorDesc, ...], outputs: tuple[TensorDesc, ...]) -> str:
    """A compiled bundle's ``metadata.json`` for these features, as Core ML's compiler writes it."""
    names: Mapping[str, str] = {"float32": "Float32", "float16": "Float16", "int32": "Int32"}

    def row(d: TensorDesc) -> dict[str, str]:
        return {
            "name": d.name,
            "type": "MultiArray",
            "dataType": names[d.dtype],
            "shape": json.dumps(list(d.shape or ())),
            "isOptional": "0",
            "hasShapeFlexibility": "0",
            "formattedType": f"MultiArray ({names[d.dtype]} "
            + " × ".join(str(x) for x in d.shape or ())
            + ")",
        }

    return json.dumps(
        [
            {
                "inputSchema": [row(d) for d in inputs],
                "outputSchema": [row(d) for d in outputs],
                "specificationVersion": 8,
                "modelType": {"name": "MLModelType_mlProgram"},
            }
        ],
        indent=2,
    )
