"""The one thing the CoreML host code needs from a model: describe it, run it.

The host code (``runtime.py``) is written against ``Predictor`` only, so the
same code runs Core ML models on a Mac (``CoreMLPredictor``) and their ONNX
twins anywhere (``OnnxPredictor``); on Linux that is how it is tested.

Descriptions come from the model itself: ``get_spec()`` for an
``.mlpackage`` (works on Linux too), ``metadata.json`` for a compiled
``.mlmodelc`` (Core ML's compiler writes the input/output schema there; the
spec is only in an undocumented binary).

Cost of loading (what a user sees on the first run):

* ``.mlmodelc`` (what FluidAudio publishes and the store downloads) is
  already compiled; ``CompiledMLModel`` still has Core ML specialise it for
  the chosen compute units on first load, which macOS caches afterwards, so
  the first run of each model on a machine (and after an OS update) is
  slower than later ones.
* ``.mlpackage`` is compiled to a temporary ``.mlmodelc`` by coremltools on
  *every* load, so prefer ``.mlmodelc``.
"""

from __future__ import annotations

import json
import logging
import platform
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from pocketcli.errors import ModelMissing as ModelMissing  # defined there; re-exported
from pocketcli.errors import UserError
from pocketcli.packs.manifest import PackError

# Core ML multi-array data types (ArrayFeatureType.ArrayDataType) -> numpy dtype names.
_SPEC_DTYPES = {
    65568: "float32",
    65552: "float16",
    65600: "float64",
    131104: "int32",
    131080: "int8",
}
_METADATA_DTYPES = {
    "float32": "float32",
    "float16": "float16",
    "double": "float64",
    "float64": "float64",
    "int32": "int32",
    "int8": "int8",
}
UNAVAILABLE_HINT = "use the onnx runtime"


@dataclass(frozen=True)
class TensorDesc:
    """One model input or output as its description states it."""

    name: str
    shape: tuple[int, ...] | None  # None: the description does not fix it
    dtype: str  # numpy dtype name


class Predictor(Protocol):
    @property
    def label(self) -> str:
        """The model file's name, for messages."""
        ...

    @property
    def inputs(self) -> tuple[TensorDesc, ...]: ...

    @property
    def outputs(self) -> tuple[TensorDesc, ...]: ...

    def predict(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Runs the model once; every input must be fed, every output is returned."""
        ...


# (directory, model name without extension, coremltools ComputeUnit name) -> Predictor
PredictorFactory = Callable[[Path, str, str], Predictor]


class DescribedModel:
    """What every Predictor shares: a file, and the tensors read from its description."""

    path: Path
    _inputs: tuple[TensorDesc, ...] = ()
    _outputs: tuple[TensorDesc, ...] = ()

    @property
    def label(self) -> str:
        return self.path.name

    @property
    def inputs(self) -> tuple[TensorDesc, ...]:
        return self._inputs

    @property
    def outputs(self) -> tuple[TensorDesc, ...]:
        return self._outputs


def model_file(directory: Path, name: str, suffixes: tuple[str, ...]) -> Path:
    """The first ``<name><suffix>`` that exists, else a PackError naming what was looked for."""
    for suffix in suffixes:
        path = directory / f"{name}{suffix}"
        if path.exists():
            return path
    wanted = " or ".join(f"{name}{s}" for s in suffixes)
    raise ModelMissing(f"{directory} is incomplete: {wanted} is missing")


def cast_feeds(
    label: str, inputs: tuple[TensorDesc, ...], feeds: dict[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """Each feed as a contiguous array of its input's dtype; unknown or missing feeds fail."""
    names = {d.name for d in inputs}
    extra = sorted(set(feeds) - names)
    missing = sorted(names - set(feeds))
    if extra or missing:
        raise ValueError(
            f"{label}: feeds do not match the inputs (missing {missing}, unknown {extra})"
        )
    return {d.name: np.ascontiguousarray(feeds[d.name], dtype=d.dtype) for d in inputs}


# -- Core ML ----------------------------------------------------------------


def coreml_unavailable_reason() -> str | None:
    """None when Core ML can run models here; else one line saying why not."""
    if sys.platform != "darwin":
        return (
            f"the CoreML runtime needs macOS; this is {platform.system() or sys.platform},"
            f" so {UNAVAILABLE_HINT}"
        )
    try:
        ct = import_coremltools()
    except ImportError:
        return (
            "the CoreML runtime needs coremltools: pip install 'pockettts[coreml]'"
            f" (or {UNAVAILABLE_HINT})"
        )
    from coremltools.models import model as ct_model  # type: ignore[import-not-found]

    if getattr(ct_model, "_MLModelProxy", None) is None:
        return (
            f"coremltools {ct.__version__} was installed without its Core ML bridge;"
            " reinstall it from a wheel (pip install --force-reinstall coremltools)"
        )
    return None


def import_coremltools() -> Any:
    """coremltools, with its import-time chatter (missing native bridge on Linux) silenced."""
    logging.getLogger("coremltools").setLevel(logging.ERROR)
    import coremltools  # type: ignore[import-not-found]

    return coremltools


def descs_from_spec(spec: Any) -> tuple[tuple[TensorDesc, ...], tuple[TensorDesc, ...]]:
    """(inputs, outputs) of a Core ML model spec (``MLModel.get_spec()``)."""

    def one(feature: Any) -> TensorDesc:
        kind = feature.type.WhichOneof("Type")
        if kind != "multiArrayType":
            raise PackError(f"model feature {feature.name!r} is a {kind}, not a multi-array")
        array = feature.type.multiArrayType
        dtype = _SPEC_DTYPES.get(array.dataType)
        if dtype is None:
            raise PackError(
                f"model feature {feature.name!r} has unsupported data type {array.dataType}"
            )
        flexible = array.WhichOneof("ShapeFlexibility") is not None
        shape = tuple(int(x) for x in array.shape) if array.shape and not flexible else None
        return TensorDesc(feature.name, shape, dtype)

    return (
        tuple(one(f) for f in spec.description.input),
        tuple(one(f) for f in spec.description.output),
    )


def descs_from_metadata(path: Path) -> tuple[tuple[TensorDesc, ...], tuple[TensorDesc, ...]]:
    """(inputs, outputs) from a compiled bundle's ``metadata.json``.

    The file is a JSON list whose first entry has ``inputSchema`` and
    ``outputSchema``: per feature ``name``, ``type`` ("MultiArray"),
    ``dataType`` ("Float16", "Float32", ...), ``shape`` as text ("[1, 32]")
    and ``hasShapeFlexibility`` ("0"/"1").
    """
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
        schema = entries[0] if isinstance(entries, list) else entries
        rows = (schema["inputSchema"], schema["outputSchema"])
    except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
        raise PackError(f"cannot read the model description {path}: {exc}") from exc

    def one(row: dict[str, Any]) -> TensorDesc:
        name = str(row.get("name", ""))
        if row.get("type", "MultiArray") != "MultiArray":
            raise PackError(f"{path}: feature {name!r} is a {row.get('type')}, not a multi-array")
        dtype = _METADATA_DTYPES.get(str(row.get("dataType", "")).lower())
        if dtype is None:
            raise PackError(
                f"{path}: feature {name!r} has unsupported data type {row.get('dataType')!r}"
            )
        shape_text = row.get("shape", "")
        shape = tuple(int(x) for x in json.loads(shape_text)) if shape_text else ()
        flexible = str(row.get("hasShapeFlexibility", "0")) == "1"
        return TensorDesc(name, shape if shape and not flexible else None, dtype)

    try:
        return tuple(one(r) for r in rows[0]), tuple(one(r) for r in rows[1])
    except (ValueError, TypeError) as exc:
        raise PackError(f"{path}: malformed feature shape: {exc}") from exc


class CoreMLPredictor(DescribedModel):
    """A Core ML model through coremltools.

    ``load=False`` only reads the description (works on Linux: coremltools
    reads specs there but cannot predict); ``predict`` then raises.
    """

    def __init__(self, path: Path, compute_unit: str = "ALL", load: bool = True) -> None:
        ct = import_coremltools()
        self.path = Path(path)
        self.compute_unit = compute_unit
        unit = ct.ComputeUnit[compute_unit]
        self._model: Any = None
        if self.path.suffix == ".mlmodelc":
            self._inputs, self._outputs = descs_from_metadata(self.path / "metadata.json")
            if load:
                self._model = ct.models.CompiledMLModel(str(self.path), compute_units=unit)
        else:
            try:
                model = ct.models.MLModel(
                    str(self.path), compute_units=unit, skip_model_load=not load
                )
            except Exception as exc:  # coremltools raises bare Exceptions
                raise PackError(f"cannot load {self.path.name}: {exc}") from exc
            self._inputs, self._outputs = descs_from_spec(model.get_spec())
            self._model = model if load else None
        if self._model is not None and any(d.shape is None for d in self._outputs):
            self._outputs = self._outputs_from_warmup()

    def predict(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if self._model is None:
            raise UserError(f"{self.label} was opened for inspection only and cannot predict")
        result = self._model.predict(cast_feeds(self.label, self._inputs, feeds))
        return {name: np.asarray(value) for name, value in result.items()}

    def _outputs_from_warmup(self) -> tuple[TensorDesc, ...]:
        """Output shapes the description leaves open, from one prediction on zeros."""
        if any(d.shape is None for d in self._inputs):
            raise PackError(f"{self.label}: inputs without fixed shapes are not supported")
        zeros = {d.name: np.zeros(d.shape or (), d.dtype) for d in self._inputs}
        result = self.predict(zeros)
        return tuple(
            TensorDesc(d.name, tuple(np.shape(result[d.name])), d.dtype) for d in self._outputs
        )


def coreml_factory(load: bool = True) -> PredictorFactory:
    """Opens ``<name>.mlmodelc`` (preferred, as FluidAudio downloads) or ``<name>.mlpackage``."""

    def open_model(directory: Path, name: str, compute_unit: str) -> Predictor:
        path = model_file(directory, name, (".mlmodelc", ".mlpackage"))
        return CoreMLPredictor(path, compute_unit, load=load)

    return open_model
