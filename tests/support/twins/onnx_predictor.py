"""ONNX Runtime behind the ``Predictor`` interface: runs the ONNX twins of Core ML models.

A twin (``twins.fluid_twins``) has the Core ML model's input and
output names, shapes and semantics, so the CoreML host code runs unchanged on
any OS; that is how it is tested without a Mac. Compute units do not apply.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnxruntime as ort

from pocketcli.packs.manifest import PackError
from pocketcli.runtimes.coreml.predictor import (
    DescribedModel,
    Predictor,
    PredictorFactory,
    TensorDesc,
    cast_feeds,
    model_file,
)

_ORT_DTYPES = {
    "tensor(float)": "float32",
    "tensor(float16)": "float16",
    "tensor(int32)": "int32",
    "tensor(int64)": "int64",
    "tensor(double)": "float64",
}


def _desc(arg: ort.NodeArg) -> TensorDesc:
    shape = arg.shape
    fixed = shape is not None and all(isinstance(x, int) for x in shape)
    return TensorDesc(
        arg.name, tuple(shape) if fixed else None, _ORT_DTYPES.get(arg.type, "float32")
    )


class OnnxPredictor(DescribedModel):
    def __init__(self, path: Path, threads: int | None = None) -> None:
        self.path = Path(path)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or int(os.environ.get("POCKETTTS_THREADS", "1"))
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        try:
            self._session = ort.InferenceSession(
                str(self.path), options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # ORT raises its own exception types
            raise PackError(f"cannot load {self.path.name}: {exc}") from exc
        self._inputs = tuple(_desc(a) for a in self._session.get_inputs())
        self._outputs = tuple(_desc(a) for a in self._session.get_outputs())
        self._output_names = [d.name for d in self._outputs]

    def predict(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        values = self._session.run(self._output_names, cast_feeds(self.label, self._inputs, feeds))
        return dict(zip(self._output_names, values, strict=True))


def onnx_factory(threads: int | None = None) -> PredictorFactory:
    """Opens ``<name>.onnx`` (the twin of ``<name>.mlmodelc``)."""

    def open_model(directory: Path, name: str, _compute_unit: str) -> Predictor:
        return OnnxPredictor(model_file(directory, name, (".onnx",)), threads)

    return open_model
