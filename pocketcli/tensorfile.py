"""Reading safetensors files ourselves: every dtype Kyutai publishes, one tensor at a time.

The ``safetensors`` package's numpy API cannot return bfloat16 (numpy has no
such type), and Kyutai's released checkpoints are BF16. The format is simple:
an unsigned 64-bit little-endian header length N, N bytes of JSON
(``{"name": {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__":
{...}}``), then the raw little-endian bytes the offsets point into. We parse
the header, check it strictly (sizes, shapes, offsets, overlaps, holes), and
read each tensor with one ``readinto`` into a buffer of its own size, so a
whole checkpoint costs its float32 copy and one tensor's raw bytes, never a
second copy of the file. (A memory map would do the same reads, but the
mapped pages stay in the process's resident set until it is unmapped.)

Float tensors come back as float32: F32 as is, F16 and BF16 exactly (BF16 is
the upper half of a float32, so ``uint16 << 16`` viewed as float32 is the
value), F64 rounded as torch's ``load_state_dict`` would. Integer and bool
tensors come back in their own dtype for the callers that expect them
(voice-state offsets).
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pocketcli.errors import TensorFileError as TensorFileError  # defined there; re-exported

MAX_HEADER_BYTES = 100 * 1024 * 1024  # the limit of the safetensors package itself
MAX_RANK = 8

# safetensors dtype -> (numpy little-endian dtype, bytes per element); BF16 is read as u16.
DTYPES: dict[str, tuple[str, int]] = {
    "F64": ("<f8", 8),
    "F32": ("<f4", 4),
    "F16": ("<f2", 2),
    "BF16": ("<u2", 2),
    "I64": ("<i8", 8),
    "I32": ("<i4", 4),
    "I16": ("<i2", 2),
    "I8": ("i1", 1),
    "U64": ("<u8", 8),
    "U32": ("<u4", 4),
    "U16": ("<u2", 2),
    "U8": ("u1", 1),
    "BOOL": ("?", 1),
}
FLOAT_DTYPES = ("F64", "F32", "F16", "BF16")
# Types the format names that no numpy we use can hold: reported by name, never read.
UNREADABLE_DTYPES = ("F8_E4M3", "F8_E5M2", "F8_E8M0", "F6_E2M3", "F6_E3M2", "F4", "C64")


@dataclass(frozen=True)
class TensorInfo:
    name: str
    dtype: str
    shape: tuple[int, ...]
    begin: int  # absolute byte offsets in the file
    end: int

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def is_float(self) -> bool:
        return self.dtype in FLOAT_DTYPES


def looks_like_safetensors(head: bytes, file_size: int) -> bool:
    """Cheap content sniffing: a plausible header length followed by ``{``."""
    if len(head) < 9 or file_size < 10:
        return False
    (n,) = struct.unpack("<Q", head[:8])
    return 2 <= n <= min(MAX_HEADER_BYTES, file_size - 8) and head[8:9] == b"{"


class TensorFile:
    """An open safetensors file: ``tensors`` (name -> TensorInfo, file order), ``read(name)``.

    Use as a context manager; every check of the header happens in the constructor.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            self._file = open(self.path, "rb")  # noqa: SIM115 - closed by close()/__exit__
        except OSError as exc:
            raise TensorFileError(f"{self.path}: cannot open: {exc.strerror or exc}") from None
        try:
            self.file_size = self._file.seek(0, 2)
            self._file.seek(0)
            self.tensors, self.metadata = self._parse_header()
        except BaseException:
            self._file.close()
            raise

    def __enter__(self) -> TensorFile:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._file.close()

    def _fail(self, message: str) -> TensorFileError:
        return TensorFileError(f"{self.path} is not a readable safetensors file: {message}")

    def _parse_header(self) -> tuple[dict[str, TensorInfo], dict[str, str]]:
        prefix = self._file.read(8)
        if len(prefix) < 8:
            raise self._fail(f"{self.file_size} bytes is shorter than its 8-byte header length")
        (n,) = struct.unpack("<Q", prefix)
        if n > MAX_HEADER_BYTES or n > self.file_size - 8:
            raise self._fail(f"header length {n} does not fit a file of {self.file_size} bytes")
        raw = self._file.read(n)
        try:
            header = json.loads(raw.decode("utf-8"), object_pairs_hook=_no_duplicates)
        except (UnicodeDecodeError, ValueError) as exc:
            raise self._fail(f"its header is not JSON ({exc})") from None
        except RecursionError:  # "[[[[...": no safetensors header nests past two levels
            raise self._fail("its header is JSON nested too deeply to be a tensor table") from None
        if not isinstance(header, dict):
            raise self._fail("its header is not a JSON object")
        metadata = header.pop("__metadata__", None) or {}
        if not isinstance(metadata, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()
        ):
            raise self._fail("__metadata__ must map strings to strings")
        data_start = 8 + n
        data_len = self.file_size - data_start
        tensors: dict[str, TensorInfo] = {}
        for name, entry in header.items():
            tensors[name] = self._entry(name, entry, data_start, data_len)
        spans = sorted((t.begin, t.end, t.name) for t in tensors.values())
        at = data_start
        for begin, end, name in spans:
            if begin < at:
                raise self._fail(f"tensor {name!r} overlaps the tensor before it")
            if begin > at:
                raise self._fail(f"{begin - at} bytes before tensor {name!r} belong to no tensor")
            at = end
        if at != self.file_size:
            raise self._fail(f"{self.file_size - at} trailing bytes belong to no tensor")
        return tensors, dict(metadata)

    def _entry(self, name: str, entry: object, data_start: int, data_len: int) -> TensorInfo:
        if not isinstance(entry, dict) or set(entry) != {"dtype", "shape", "data_offsets"}:
            raise self._fail(f"tensor {name!r} must have exactly dtype, shape and data_offsets")
        dtype, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
        if not isinstance(dtype, str) or (dtype not in DTYPES and dtype not in UNREADABLE_DTYPES):
            raise self._fail(f"tensor {name!r} has unknown dtype {dtype!r}")
        if (
            not isinstance(shape, list)
            or len(shape) > MAX_RANK
            or not all(type(d) is int and d >= 0 for d in shape)
        ):
            raise self._fail(f"tensor {name!r} has an invalid shape {shape!r}")
        if (
            not isinstance(offsets, list)
            or len(offsets) != 2
            or not all(type(o) is int for o in offsets)
            or not 0 <= offsets[0] <= offsets[1] <= data_len
        ):
            raise self._fail(
                f"tensor {name!r} has data offsets {offsets!r} outside the {data_len} data bytes"
            )
        info = TensorInfo(
            name, dtype, tuple(shape), data_start + offsets[0], data_start + offsets[1]
        )
        if dtype in DTYPES and info.size * DTYPES[dtype][1] != info.end - info.begin:
            raise self._fail(
                f"tensor {name!r} ({dtype} {list(shape)}) needs"
                f" {info.size * DTYPES[dtype][1]} bytes, its offsets span {info.end - info.begin}"
            )
        return info

    def read(self, name: str) -> np.ndarray:
        """The tensor as a new array: float32 for every float dtype, else its own dtype."""
        info = self.tensors[name]
        if info.dtype not in DTYPES:
            raise TensorFileError(
                f"{self.path}: tensor {name!r} has dtype {info.dtype}, which pockettts cannot read"
                " (use F32, F16 or BF16)"
            )
        code, _width = DTYPES[info.dtype]
        raw = np.empty(info.size, np.dtype(code))
        self._file.seek(info.begin)
        got = self._file.readinto(memoryview(raw).cast("B")) if raw.nbytes else 0
        if got != raw.nbytes:
            raise TensorFileError(f"{self.path}: tensor {name!r} is cut short ({got} bytes read)")
        if info.dtype == "BF16":
            wide = raw.astype(np.uint32)
            del raw
            wide <<= 16
            out = wide.view(np.float32)
        elif info.is_float:
            out = raw if raw.dtype == np.float32 else raw.astype(np.float32)
        else:
            out = raw.astype(raw.dtype.newbyteorder("="), copy=False)
        return out.reshape(info.shape)

    def items(self) -> Iterator[tuple[str, np.ndarray]]:
        for name in self.tensors:
            yield name, self.read(name)


def _no_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def dtype_counts(tensors: dict[str, TensorInfo]) -> dict[str, int]:
    """How many tensors of each dtype, most common first."""
    counts: dict[str, int] = {}
    for t in tensors.values():
        counts[t.dtype] = counts.get(t.dtype, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
