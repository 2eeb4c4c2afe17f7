"""What a reader needs of an ONNX file's graph, read from the protobuf wire format itself.

``import onnx`` costs about a second of CPU (its ``helper`` imports ``ml_dtypes``); a
runtime opening a browser pack only needs the row count of the text table, so it reads
the few fields it needs here (ModelProto.graph 7; GraphProto.node 1, initializer 5;
NodeProto.input 1, op_type 4; TensorProto.dims 1, name 8), skipping everything else by
its length: the weights are never decoded.
"""

from __future__ import annotations

from pathlib import Path

_VARINT, _FIXED64, _BYTES, _FIXED32 = 0, 1, 2, 5


def _varint(data: memoryview, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise ValueError("truncated varint")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7


def fields(data: memoryview) -> list[tuple[int, int | memoryview]]:
    """The (field number, value) pairs of one message: an int, or the bytes of a
    length-delimited field (a string, a sub-message, packed numbers)."""
    out: list[tuple[int, int | memoryview]] = []
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, kind = key >> 3, key & 7
        if kind == _VARINT:
            value, at = _varint(data, at)
            out.append((number, value))
        elif kind == _BYTES:
            size, at = _varint(data, at)
            if at + size > len(data):
                raise ValueError("truncated field")
            out.append((number, data[at : at + size]))
            at += size
        elif kind in (_FIXED64, _FIXED32):
            at += 8 if kind == _FIXED64 else 4
        else:
            raise ValueError(f"wire type {kind}")
    return out


def _dims(tensor: memoryview) -> tuple[list[int], str]:
    dims: list[int] = []
    name = ""
    for number, value in fields(tensor):
        if number == 1 and isinstance(value, int):
            dims.append(value)
        elif number == 1:  # packed
            at = 0
            while at < len(value):
                dim, at = _varint(value, at)
                dims.append(dim)
        elif number == 8 and not isinstance(value, int):
            name = bytes(value).decode("utf-8", "replace")
    return dims, name


def gather_table_rows(path: str | Path, index_input: str) -> int | None:
    """Rows of the initializer a Gather* node indexes with ``index_input`` (None: no such
    node or table). Raises ``ValueError`` for bytes that are no protobuf message."""
    data = memoryview(Path(path).read_bytes())
    graphs = [v for n, v in fields(data) if n == 7 and not isinstance(v, int)]
    if not graphs:
        return None
    tables: list[str] = []
    shapes: dict[str, list[int]] = {}
    for number, value in fields(graphs[0]):
        if isinstance(value, int):
            continue
        if number == 1:
            node = fields(value)
            inputs = [
                bytes(v).decode("utf-8", "replace")
                for n, v in node
                if n == 1 and not isinstance(v, int)
            ]
            op = b"".join(bytes(v) for n, v in node if n == 4 and not isinstance(v, int))
            if op.startswith(b"Gather") and inputs[1:2] == [index_input]:
                tables.append(inputs[0])
        elif number == 5:
            dims, name = _dims(value)
            shapes[name] = dims
    for table in tables:
        if shapes.get(table):
            return int(shapes[table][0])
    return None
