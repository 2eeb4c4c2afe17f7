"""Writing safetensors files by hand, torch-free: BF16/F16/F32 mixes and broken headers.

The ``safetensors`` package cannot write bfloat16 from numpy, and it refuses to
write malformed files; tests need both. ``write`` takes (dtype, shape, raw
bytes) per tensor, or a header to use verbatim.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np

from tests.support.paths import DATA

NUMPY = {"F32": "<f4", "F16": "<f2", "F64": "<f8", "I64": "<i8", "I32": "<i4", "U8": "u1"}
KYUTAI_AUDIO_PROMPT_SHA256 = {
    "cosette": "ca8926c4f234afa9d722173967e7bebdc6269538ca5910d65f41c3c1317717d3",
    "jean": "329530f87ce503061acefca8669300963420ff97e43647a326aa46bd987b983c",
    "fantine": "b6918a2ece002d2d9037ff53c4ea38730175e8798786658b0958443edf49d355",
}
REAL_VOICES = DATA / "voices-en-2026-01"
# voices.bin of the ONNX web demos holding cosette, jean and fantine (see SOURCES.md there).
VOICES_BIN_SHA256 = "a499039e88043ff86cb39705f487cc761406d55f1e73ad19a3c055b16e86b062"


def bf16_bits(a: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bit patterns, rounded to nearest even (finite values)."""
    u = np.ascontiguousarray(a, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2")


def bf16_round(a: np.ndarray) -> np.ndarray:
    """The float32 values a BF16 file of ``a`` holds."""
    return (bf16_bits(a).astype(np.uint32) << 16).view(np.float32)


def encode(a: np.ndarray, dtype: str) -> tuple[str, tuple[int, ...], bytes]:
    if dtype == "BF16":
        return dtype, a.shape, bf16_bits(a).tobytes()
    return dtype, a.shape, np.ascontiguousarray(a).astype(NUMPY[dtype]).tobytes()


def write(
    path: Path,
    tensors: dict[str, tuple[str, tuple[int, ...], bytes]],
    metadata: dict[str, str] | None = None,
) -> Path:
    header: dict[str, object] = {}
    if metadata:
        header["__metadata__"] = metadata
    data = b""
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {
            "dtype": dtype,
            "shape": list(shape),
            "data_offsets": [len(data), len(data) + len(raw)],
        }
        data += raw
    write_raw(path, json.dumps(header).encode(), data)
    return path


def write_raw(path: Path, header: bytes, data: bytes) -> Path:
    header += b" " * (-len(header) % 8)
    path.write_bytes(struct.pack("<Q", len(header)) + header + data)
    return path


def write_arrays(path: Path, arrays: dict[str, np.ndarray], dtype: str | dict[str, str]) -> Path:
    """Every array as ``dtype`` (or ``dtype[name]``, default F32)."""
    pick = (lambda _n: dtype) if isinstance(dtype, str) else (lambda n: dtype.get(n, "F32"))
    return write(path, {name: encode(a, pick(name)) for name, a in arrays.items()})


def voices_bin(voices: dict[str, np.ndarray]) -> bytes:
    """The web demos' container: u32 count, then per voice name[32], u32 T, u32 D, floats."""
    out = struct.pack("<I", len(voices))
    for name, cond in voices.items():
        out += name.encode().ljust(32, b"\0") + struct.pack("<II", *cond.shape)
        out += np.ascontiguousarray(cond, "<f4").tobytes()
    return out


def real_voices_bin() -> bytes:
    """voices.bin rebuilt from the three Kyutai files (the published one has VOICES_BIN_SHA256)."""
    from pocketcli.tensorfile import TensorFile

    voices = {}
    for name in ("cosette", "jean", "fantine"):
        with TensorFile(REAL_VOICES / f"{name}.safetensors") as f:
            voices[name] = f.read("audio_prompt")[0]
    return voices_bin(voices)
