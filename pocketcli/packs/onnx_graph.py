"""A small helper for writing ONNX graphs by hand from numpy weights.

Packs are built without PyTorch: every network is spelled out op by op here,
so the graphs stay readable and the builder needs only numpy and onnx.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 20
_DTYPES = {
    np.dtype(np.float32): TensorProto.FLOAT,
    np.dtype(np.int64): TensorProto.INT64,
    np.dtype(np.bool_): TensorProto.BOOL,
}


class GraphBuilder:
    """Accumulates nodes, weights and I/O for one ONNX graph.

    Methods return the name of the tensor they produce, so network code reads
    like ordinary array code: ``h = g.matmul(x, w)``.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.inputs: list[onnx.ValueInfoProto] = []
        self.outputs: list[onnx.ValueInfoProto] = []
        self._counter = itertools.count()
        self._constants: dict[tuple, str] = {}

    # -- naming and I/O -------------------------------------------------
    def fresh(self, hint: str) -> str:
        return f"{hint}__{next(self._counter)}"

    def input(self, name: str, dtype: type, shape: Sequence[int | str | None]) -> str:
        self.inputs.append(helper.make_tensor_value_info(name, _DTYPES[np.dtype(dtype)], shape))
        return name

    def output(
        self, tensor: str, name: str, dtype: type, shape: Sequence[int | str | None]
    ) -> None:
        self.op("Identity", [tensor], out=name)
        self.outputs.append(helper.make_tensor_value_info(name, _DTYPES[np.dtype(dtype)], shape))

    def weight(self, name: str, array: np.ndarray) -> str:
        """Registers a named initializer (weights keep readable names)."""
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def const(self, value, dtype: type = np.float32, hint: str = "const") -> str:
        """A small constant, shared between uses of the same value (named after ``hint``)."""
        array = np.asarray(value, dtype=dtype)
        key = (array.dtype.str, array.shape, array.tobytes())
        if key not in self._constants:
            self._constants[key] = self.weight(self.fresh(hint), array)
        return self._constants[key]

    def op(self, op_type: str, inputs: Sequence[str], out: str | None = None, **attrs) -> str:
        out = out or self.fresh(op_type.lower())
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], name=out, **attrs))
        return out

    def op_multi(self, op_type: str, inputs: Sequence[str], n_out: int, **attrs) -> list[str]:
        outs = [self.fresh(op_type.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op_type, list(inputs), outs, name=outs[0], **attrs))
        return outs

    def model(self) -> onnx.ModelProto:
        graph = helper.make_graph(
            self.nodes, self.name, self.inputs, self.outputs, self.initializer_list()
        )
        model = helper.make_model(
            graph,
            opset_imports=[helper.make_opsetid("", OPSET)],
            producer_name="pockettts",
        )
        model.ir_version = 8
        return model

    def initializer_list(self) -> list[onnx.TensorProto]:
        return self.initializers

    # -- layers ---------------------------------------------------------
    def linear(self, x: str, weight: np.ndarray, bias: np.ndarray | None, name: str) -> str:
        """``x @ weight.T + bias`` with a torch-layout weight ``[out, in]``."""
        y = self.op("MatMul", [x, self.weight(f"{name}.weight_t", weight.T)])
        if bias is not None:
            y = self.op("Add", [y, self.weight(f"{name}.bias", bias)])
        return y

    def layer_norm(
        self,
        x: str,
        weight: np.ndarray | None,
        bias: np.ndarray | None,
        eps: float,
        name: str,
        dim: int | None = None,
    ) -> str:
        if weight is None:
            assert dim is not None
            weight = np.ones(dim, np.float32)
            bias = np.zeros(dim, np.float32)
        assert bias is not None
        return self.op(
            "LayerNormalization",
            [x, self.weight(f"{name}.weight", weight), self.weight(f"{name}.bias", bias)],
            axis=-1,
            epsilon=eps,
        )

    def gelu_tanh(self, x: str) -> str:
        """GELU with the tanh approximation, as torch's ``approximate="tanh"``: one op
        (opset 20) instead of the seven of its formula, which ONNX Runtime does not fuse."""
        return self.op("Gelu", [x], approximate="tanh")

    def silu(self, x: str) -> str:
        return self.op("Mul", [x, self.op("Sigmoid", [x])])

    def reshape(self, x: str, shape: Sequence[int]) -> str:
        return self.op("Reshape", [x, self.const(list(shape), np.int64)])

    def transpose(self, x: str, perm: Sequence[int]) -> str:
        return self.op("Transpose", [x], perm=list(perm))

    def slice(self, x: str, start: int, end: int, axis: int) -> str:
        return self.op(
            "Slice",
            [
                x,
                self.const([start], np.int64),
                self.const([end], np.int64),
                self.const([axis], np.int64),
            ],
        )

    def split(self, x: str, sizes: Sequence[int], axis: int) -> list[str]:
        return self.op_multi("Split", [x, self.const(list(sizes), np.int64)], len(sizes), axis=axis)

    def concat(self, xs: Sequence[str], axis: int) -> str:
        return self.op("Concat", list(xs), axis=axis)

    def unsqueeze(self, x: str, axes: Sequence[int]) -> str:
        return self.op("Unsqueeze", [x, self.const(list(axes), np.int64)])

    def squeeze(self, x: str, axes: Sequence[int]) -> str:
        return self.op("Squeeze", [x, self.const(list(axes), np.int64)])

    def shape_dim(self, x: str, axis: int) -> str:
        """The size of one axis as an int64 tensor of shape [1]."""
        return self.op("Shape", [x], start=axis, end=axis + 1)
