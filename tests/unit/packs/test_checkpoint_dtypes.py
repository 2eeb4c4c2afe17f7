"""Checkpoints in every dtype Kyutai publishes (BF16, F16, F32, mixed), and hostile files.

Torch-free: the files are written by hand (tests/support/tensorfiles.py). The oracle
proof that a BF16 pack sounds like pocket-tts on the same file is in
tests/oracle/test_kyutai_files.py.
"""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from safetensors.numpy import load_file

from pocketcli import PocketTTS
from pocketcli.config import ModelConfig
from pocketcli.options import SpeakOptions
from pocketcli.packs.builder import build_pack
from pocketcli.packs.checkpoint import CheckpointError, read_checkpoint
from pocketcli.tensorfile import TensorFile, TensorFileError
from tests.support import tensorfiles

TOKENIZER = tensorfiles.REAL_VOICES.parent / "tokenizer-en" / "tokenizer.model"


def one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text and "Traceback" not in text
    return text


def test_bf16_bit_patterns_become_the_float32_values_they_stand_for(tmp_path) -> None:
    bits = np.array([0x3F80, 0xC000, 0x7F7F, 0x0001, 0x8000, 0x3EAB], "<u2")
    path = tensorfiles.write(tmp_path / "b.safetensors", {"t": ("BF16", (6,), bits.tobytes())})
    with TensorFile(path) as f:
        got = f.read("t")
    assert got.dtype == np.float32
    want = np.array([1.0, -2.0, 3.3895314e38, 9.183549e-41, -0.0, 0.333984375], np.float32)
    assert np.array_equal(got, want) and np.signbit(got[4])


def test_mixed_dtypes_read_exactly_like_the_float32_they_hold(tmp_path, fixture_dir) -> None:
    weights = load_file(str(fixture_dir / "model.safetensors"))
    names = sorted(weights)
    # Three dtypes in one file; F16 and BF16 tensors hold what those types can represent.
    kinds = {n: ("BF16", "F16", "F32")[i % 3] for i, n in enumerate(names)}
    exact = {}
    for name, value in weights.items():
        if kinds[name] == "BF16":
            exact[name] = tensorfiles.bf16_round(value)
        elif kinds[name] == "F16":
            exact[name] = value.astype(np.float16).astype(np.float32)
        else:
            exact[name] = value
    mixed = tensorfiles.write_arrays(tmp_path / "mixed.safetensors", exact, kinds)
    ours = read_checkpoint(mixed)
    assert set(ours) == set(exact)
    for name in names:
        assert ours[name].dtype == np.float32 and np.array_equal(ours[name], exact[name]), name
    assert any(not np.array_equal(exact[n], weights[n]) for n in names)  # rounding happened


def test_a_bf16_checkpoint_builds_the_same_pack_as_its_float32_values(
    tmp_path, fixture_dir, voice_path
) -> None:
    weights = load_file(str(fixture_dir / "model.safetensors"))
    rounded = {k: tensorfiles.bf16_round(v) for k, v in weights.items()}
    bf16 = tensorfiles.write_arrays(tmp_path / "bf16.safetensors", rounded, "BF16")
    f32 = tensorfiles.write_arrays(tmp_path / "f32.safetensors", rounded, "F32")
    assert bf16.stat().st_size < 0.6 * f32.stat().st_size
    config = ModelConfig.from_yaml(fixture_dir / "config.yaml")
    audio = []
    for name, path in (("bf16", bf16), ("f32", f32)):
        build_pack(path, config, TOKENIZER, tmp_path / name)
        tts = PocketTTS.open(runtime="onnx", model_dir=tmp_path / name)
        audio.append(
            tts.synthesize(
                "Same weights.", tts.voices.load(voice_path), options=SpeakOptions(seed=2)
            )
        )
    assert audio[0].size > 0 and np.array_equal(audio[0], audio[1])


@pytest.mark.parametrize(
    "dtype, value, message",
    [
        ("I64", np.arange(4), "tensor flow_lm.bos_emb has dtype I64; a checkpoint holds float"),
        ("BF16", np.array([1.0, np.inf, 0, 0], np.float32), "flow_lm.bos_emb holds NaN or inf"),
        ("F16", np.array([1.0, np.nan, 0, 0], np.float32), "flow_lm.bos_emb holds NaN or inf"),
    ],
)
def test_non_float_or_non_finite_tensors_are_one_line_naming_the_tensor(
    tmp_path, dtype, value, message
) -> None:
    path = tensorfiles.write(
        tmp_path / "bad.safetensors",
        {
            "flow_lm.emb_std": tensorfiles.encode(np.ones(4, np.float32), "F32"),
            "flow_lm.bos_emb": tensorfiles.encode(value, dtype),
        },
    )
    with pytest.raises(CheckpointError, match=message) as info:
        read_checkpoint(path)
    assert str(path) in one_line(info.value)


def test_an_fp8_tensor_is_named_not_misread(tmp_path) -> None:
    path = tensorfiles.write(tmp_path / "f8.safetensors", {"w": ("F8_E4M3", (4,), b"\0" * 4)})
    with pytest.raises(CheckpointError, match="tensor w has dtype F8_E4M3"):
        read_checkpoint(path)


def _header(entries: dict) -> bytes:
    return json.dumps(entries).encode()


@pytest.mark.parametrize(
    "header, data, message",
    [
        (_header({"t": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}), b"\0" * 8,
         "needs 12 bytes, its offsets span 8"),
        (_header({"t": {"dtype": "F32", "shape": [2], "data_offsets": [0, 80]}}), b"\0" * 8,
         "outside the 8 data bytes"),
        (_header({"t": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}}), b"\0" * 8,
         "invalid shape"),
        (_header({"t": {"dtype": "F32", "shape": [2.5], "data_offsets": [0, 8]}}), b"\0" * 8,
         "invalid shape"),
        (_header({"t": {"dtype": "Q4", "shape": [2], "data_offsets": [0, 8]}}), b"\0" * 8,
         "unknown dtype 'Q4'"),
        (_header({"t": {"dtype": "F32", "shape": [2]}}), b"\0" * 8,
         "exactly dtype, shape and data_offsets"),
        (_header({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                  "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}), b"\0" * 8,
         "overlaps"),
        (_header({"t": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}), b"\0" * 8,
         "4 bytes before tensor 't' belong to no tensor"),
        (_header({"t": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}), b"\0" * 8,
         "4 trailing bytes"),
        (b'{"t": 1, "t": 2}', b"", "duplicate key"),
        (b"[1, 2]", b"", "not a JSON object"),
        (b'{"__metadata__": {"a": 1}}', b"", "__metadata__ must map strings"),
        (b"\xff{", b"", "not JSON"),
        (_header({"t": {"dtype": "F32", "shape": [1] * 9, "data_offsets": [0, 4]}}), b"\0" * 4,
         "invalid shape"),
    ],
)  # fmt: skip
def test_malformed_headers_are_one_line(tmp_path, header, data, message) -> None:
    path = tensorfiles.write_raw(tmp_path / "bad.safetensors", header, data)
    with pytest.raises(CheckpointError, match=message) as info:
        read_checkpoint(path)
    assert one_line(info.value).startswith(f"{path} is not a readable safetensors file")


def test_header_length_beyond_the_file(tmp_path) -> None:
    path = tmp_path / "short.safetensors"
    path.write_bytes(struct.pack("<Q", 1 << 40) + b"{}")
    with pytest.raises(CheckpointError, match="header length 1099511627776 does not fit"):
        read_checkpoint(path)
    path.write_bytes(b"abc")
    with pytest.raises(CheckpointError, match="shorter than its 8-byte header length"):
        read_checkpoint(path)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_corruption_of_a_valid_file_is_a_clean_error_or_a_valid_read(tmp_path_factory, data):
    """Flipped, cut or appended bytes: either a TensorFileError or arrays of the declared
    shapes; never another exception."""
    tmp = tmp_path_factory.mktemp("fuzz")
    good = tensorfiles.write(
        tmp / "good.safetensors",
        {
            "a": tensorfiles.encode(np.arange(6, dtype=np.float32).reshape(2, 3), "BF16"),
            "b": tensorfiles.encode(np.arange(3), "I64"),
        },
        metadata={"format": "pt"},
    ).read_bytes()
    raw = bytearray(good)
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(raw) - 1))
        raw[at] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(raw)))
    raw = raw[:cut] + data.draw(st.binary(max_size=16))
    path = tmp / "mutated.safetensors"
    path.write_bytes(bytes(raw))
    try:
        with TensorFile(path) as f:
            for name, info in f.tensors.items():
                try:
                    value = f.read(name)
                except TensorFileError:
                    continue
                assert value.shape == info.shape
    except TensorFileError as exc:
        one_line(exc)
