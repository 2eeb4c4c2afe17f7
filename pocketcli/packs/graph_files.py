"""How a graph sits on disk: the network in ``name.onnx``, its weights in ``name.onnx.data``.

ONNX Runtime maps a side file of weights instead of parsing them out of the
protobuf, which keeps no second copy in memory and loads in half the time
(full-size english FlowLM at fp32: 0.4 s and 375 MB against 1.0 s and 532 MB
with the weights inside). It also keeps every graph below protobuf's 2 GiB.
"""

from __future__ import annotations

from pathlib import Path

import onnx


def side_file(path: Path) -> Path:
    return path.with_name(path.name + ".data")


def save_graph(model: onnx.ModelProto, path: Path) -> None:
    onnx.save_model(
        model,
        str(path),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location=side_file(path).name,
        size_threshold=1024,
    )


def remove_graph(path: Path) -> None:
    path.unlink()
    side_file(path).unlink(missing_ok=True)
