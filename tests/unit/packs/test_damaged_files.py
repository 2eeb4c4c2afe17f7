"""Damaged checkpoints and voice files: a clean one-line error, or exactly what was written.

Each example takes a valid file and flips, cuts, appends, inserts or duplicates bytes (a
splice of the file into itself). Reading it must either raise the format's own error, on
one line, or give back arrays that are the bytes the file holds where its header says, and,
when the header and those bytes are untouched, the very values first written. Hypothesis
runs the conftest profile ("ci": derandomised, a fixed number of examples).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pocketcli import PocketTTS
from pocketcli.tensorfile import TensorFile, TensorFileError
from pocketcli.voices.formats import FORMATS, identify, read_conditioning
from pocketcli.voices.state import VoiceError, load_voice_state
from tests.support import tensorfiles

WIDTH = 64  # the tiny model's d_model
EXAMPLES = 120


def test_the_ci_profile_is_loaded() -> None:
    if os.environ.get("HYPOTHESIS_PROFILE", "ci") != "ci":
        pytest.skip(f"HYPOTHESIS_PROFILE={os.environ['HYPOTHESIS_PROFILE']} chosen by hand")
    assert settings.default.derandomize is True
    assert settings.default.database is None


def one_line(exc: BaseException) -> str:
    text = str(exc)
    assert text and "\n" not in text and "Traceback" not in text
    return text


@st.composite
def damaged(draw: st.DrawFn, good: bytes) -> bytes:
    """``good`` with 1 to 4 of: a flipped byte, a cut, appended bytes, inserted bytes, or a
    piece of the file copied into another place (a splice)."""
    raw = bytearray(good)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "cut", "append", "insert", "splice"]))
        if op == "flip" and raw:
            raw[draw(st.integers(0, len(raw) - 1))] ^= draw(st.integers(1, 255))
        elif op == "cut":
            raw = raw[: draw(st.integers(0, len(raw)))]
        elif op == "append":
            raw += draw(st.binary(min_size=1, max_size=64))
        elif op == "insert":
            at = draw(st.integers(0, len(raw)))
            raw[at:at] = draw(st.binary(min_size=1, max_size=16))
        elif op == "splice" and raw:
            start = draw(st.integers(0, len(raw) - 1))
            piece = raw[start : start + draw(st.integers(1, 64))]
            at = draw(st.integers(0, len(raw)))
            if draw(st.booleans()):
                raw[at:at] = piece  # duplicated into the file
            else:
                raw[at : at + len(piece)] = piece  # written over what was there
    return bytes(raw)


def _decode(raw: bytes, dtype: str) -> np.ndarray:
    """An independent decoder of the dtypes the fuzzed files use."""
    if dtype == "BF16":
        return (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
    return np.frombuffer(raw, {"F32": "<f4", "I64": "<i8", "F16": "<f2"}[dtype])


# --------------------------------------------------------------------------- checkpoints

WRITTEN = {
    "a": np.linspace(-2, 3, 6, dtype=np.float32).reshape(2, 3),
    "b": np.arange(-1, 2, dtype=np.int64),
    "c": np.array([0.5, -7.25, 1e-3, 12.0], np.float32),
}
DTYPES = {"a": "BF16", "b": "I64", "c": "F32"}


class Good(bytes):
    """A valid file's bytes (short repr: Hypothesis prints the arguments of a failure)."""

    def __repr__(self) -> str:
        return f"<{len(self)} bytes>"


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Good:
    path = tmp_path_factory.mktemp("good") / "good.safetensors"
    tensors = {k: tensorfiles.encode(v, DTYPES[k]) for k, v in WRITTEN.items()}
    return Good(tensorfiles.write(path, tensors, metadata={"format": "pt"}).read_bytes())


def _header_end(raw: bytes) -> int:
    return 8 + int.from_bytes(raw[:8], "little")


@settings(max_examples=EXAMPLES)
@given(data=st.data())
def test_a_damaged_checkpoint_reads_back_what_it_holds_or_fails_cleanly(
    checkpoint: Good, tmp_path_factory, data
) -> None:
    raw = data.draw(damaged(checkpoint))
    path = tmp_path_factory.mktemp("fuzz") / "damaged.safetensors"
    path.write_bytes(raw)
    try:
        with TensorFile(path) as f:
            for name, info in f.tensors.items():
                value = f.read(name)
                assert value.shape == info.shape
                held = _decode(raw[info.begin : info.end], info.dtype).reshape(info.shape)
                np.testing.assert_array_equal(value, held)
                untouched = raw[: _header_end(checkpoint)] == checkpoint[: _header_end(checkpoint)]
                if untouched and raw[info.begin : info.end] == checkpoint[info.begin : info.end]:
                    expected = WRITTEN[name]
                    if DTYPES[name] == "BF16":
                        expected = tensorfiles.bf16_round(expected)
                    np.testing.assert_array_equal(value, expected)
    except TensorFileError as exc:
        assert one_line(exc).startswith(str(path))


def test_an_intact_checkpoint_reads_back_exactly(checkpoint: Good, tmp_path) -> None:
    path = tmp_path / "good.safetensors"
    path.write_bytes(checkpoint)
    with TensorFile(path) as f:
        got = dict(f.items())
    np.testing.assert_array_equal(got["a"], tensorfiles.bf16_round(WRITTEN["a"]))
    np.testing.assert_array_equal(got["b"], WRITTEN["b"])
    np.testing.assert_array_equal(got["c"], WRITTEN["c"])


@pytest.mark.parametrize("extra", [b"\0", b"x" * 9])
def test_appended_bytes_are_refused(checkpoint: Good, tmp_path, extra: bytes) -> None:
    path = tmp_path / "longer.safetensors"
    path.write_bytes(checkpoint + extra)
    with pytest.raises(TensorFileError, match=f"{len(extra)} trailing bytes belong to no tensor"):
        TensorFile(path)


# --------------------------------------------------------------------------- voice states


@pytest.fixture(scope="module")
def voice_state_file(voice_path: Path) -> Good:
    return Good(voice_path.read_bytes())


@settings(max_examples=EXAMPLES)
@given(data=st.data())
def test_a_damaged_voice_state_is_what_it_holds_or_a_clean_error(
    voice_state_file: Good, voice_path: Path, tmp_path_factory, data
) -> None:
    raw = data.draw(damaged(voice_state_file))
    path = tmp_path_factory.mktemp("fuzz") / "voice.safetensors"
    path.write_bytes(raw)
    try:
        state = load_voice_state(path)
    except VoiceError as exc:
        one_line(exc)
        return
    original = load_voice_state(voice_path)
    with TensorFile(path) as f:
        for i in range(state.num_layers):
            info = f.tensors[f"transformer.layers.{i}.self_attn/cache"]
            cache = _decode(raw[info.begin : info.end], info.dtype).reshape(info.shape)
            n = state.length
            np.testing.assert_array_equal(state.keys[i], cache[0, 0, :n])
            np.testing.assert_array_equal(state.values[i], cache[1, 0, :n])
            assert np.isfinite(state.keys[i]).all() and np.isfinite(state.values[i]).all()
    if raw == voice_state_file:
        for got, want in zip(
            state.keys + state.values, original.keys + original.values, strict=True
        ):
            np.testing.assert_array_equal(got, want)


# --------------------------------------------------------------------------- voices.bin

VOICES = {"a": np.random.default_rng(1).standard_normal((2, WIDTH)).astype(np.float32)}
VOICES["bb"] = np.random.default_rng(2).standard_normal((3, WIDTH)).astype(np.float32)


@pytest.fixture(scope="module")
def tts(pack_dir: Path) -> PocketTTS:
    return PocketTTS.open(runtime="onnx", model_dir=pack_dir)


@settings(max_examples=EXAMPLES)
@given(data=st.data())
def test_a_damaged_voices_bin_gives_the_voices_it_holds_or_a_clean_error(
    tts: PocketTTS, tmp_path_factory, data
) -> None:
    good = Good(tensorfiles.voices_bin(VOICES))
    raw = data.draw(damaged(good))
    path = tmp_path_factory.mktemp("fuzz") / "voices.bin"
    path.write_bytes(raw)
    try:
        vf = identify(path)
    except VoiceError as exc:
        one_line(exc)
        return
    assert vf.format in FORMATS and vf.voices
    if vf.format == "voices-bin":  # its records and data chain up to the file's end
        assert 4 + sum(40 + 4 * v.frames * v.width for v in vf.voices) == len(raw)
    readable: list[tuple[str, np.ndarray]] = []
    for entry in vf.voices if vf.format == "voices-bin" else ():
        at, size = vf.offsets[entry.name]
        held = np.frombuffer(raw[at : at + size], "<f4").reshape(entry.frames, entry.width)
        try:
            got = read_conditioning(vf, entry, WIDTH)
        except VoiceError as exc:
            one_line(exc)
            continue
        np.testing.assert_array_equal(got, held)
        if entry.name in VOICES and raw[: at + size] == good[: at + size]:
            np.testing.assert_array_equal(got, VOICES[entry.name])  # what was written
        readable.append((entry.name, got))
    for name, conditioning in readable[:1]:  # the whole load, through the model, once
        voice = tts.voices.load(path, name)
        assert voice.conditioning is not None
        np.testing.assert_array_equal(voice.conditioning, conditioning)
