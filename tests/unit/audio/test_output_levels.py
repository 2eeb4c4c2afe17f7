"""Audio past full scale and below zero: clipping, peak normalisation, the output chain.

The tiny fixture's raw audio is a DC offset between 0.0 and 0.25, on which a missing clip or
a peak taken as ``max`` instead of ``abs().max`` changes nothing. These tests speak with
tests/fixtures/loud (its raw audio crosses zero and passes full scale on both sides, the
negative peak the larger; see scripts/make_fixture_pack.py).
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from pocketcli import PocketTTS
from pocketcli.audio.output import encode_stream, open_audio_writer
from pocketcli.audio.postprocess import OutputChain, apply_output_chain, peak_normalize
from pocketcli.options import SpeakOptions
from tests.support.paths import FIXTURES

TEXT = "Loud enough to clip. Quiet enough to cross zero."
BLOCK = 1000  # not a frame multiple, so block edges fall anywhere
ORACLE_AUDIO = FIXTURES / "loud" / "reference_audio.npy"


@pytest.fixture(scope="module")
def loud_tts(loud_pack_dir: Path) -> PocketTTS:
    return PocketTTS.open(runtime="onnx", model_dir=loud_pack_dir)


@pytest.fixture(scope="module")
def raw(loud_tts: PocketTTS, voice_path: Path) -> np.ndarray:
    voice = loud_tts.voices.load(voice_path)
    return loud_tts.synthesize(TEXT, voice, options=SpeakOptions(seed=3, output_chain=False))


def _blocks(audio: np.ndarray) -> list[np.ndarray]:
    return [audio[i : i + BLOCK] for i in range(0, audio.size, BLOCK)]


def test_the_loud_fixture_is_the_oracle_s_and_reaches_past_full_scale(
    loud_tts: PocketTTS, voice_path: Path, loud_reference: dict, raw: np.ndarray
) -> None:
    voice = loud_tts.voices.load(voice_path)
    frames = loud_tts.stream(
        loud_reference["text"],
        voice,
        options=SpeakOptions(
            temperature=0.0,
            max_tokens=loud_reference["max_tokens"],
            normalize=False,
            output_chain=False,
        ),
    )
    ours = np.concatenate([f.audio for f in frames])
    oracle = np.load(ORACLE_AUDIO)
    assert ours.shape == oracle.shape
    assert np.abs(ours - oracle).max() <= 1e-4
    for audio in (oracle, raw):
        assert audio.min() < -1.0 and audio.max() > 1.0
        assert -audio.min() > audio.max()  # the larger peak is the negative one
        assert 0.2 < (audio < 0).mean() < 0.95


def _decode(data: bytes, fmt: str) -> np.ndarray:
    if fmt == "s16le":
        return np.frombuffer(data, "<i2").astype(np.float64)
    if fmt == "f32le":
        return np.frombuffer(data, "<f4").astype(np.float64)
    dtype = "float32" if fmt == "ogg" else "int16"
    audio, rate = sf.read(io.BytesIO(data), dtype=dtype)
    assert rate == 24_000
    return audio.astype(np.float64)


@pytest.mark.parametrize("fmt", ["wav", "flac", "s16le"])
def test_16_bit_output_saturates_past_full_scale(raw: np.ndarray, fmt: str) -> None:
    out = _decode(b"".join(encode_stream(_blocks(raw), fmt, 24_000)), fmt)
    assert out.shape == raw.shape
    over, under = raw > 1.0, raw < -1.0
    assert over.any() and under.any()
    assert (out[over] == 32767).all() and (out[under] == -32767).all()  # never wrapped
    inside = ~(over | under)
    assert np.abs(out[inside] - raw[inside] * 32767).max() <= 0.5 + 1e-3


def test_float_output_saturates_past_full_scale(raw: np.ndarray) -> None:
    out = _decode(b"".join(encode_stream(_blocks(raw), "f32le", 24_000)), "f32le")
    assert (out[raw > 1.0] == 1.0).all() and (out[raw < -1.0] == -1.0).all()
    inside = np.abs(raw) <= 1.0
    np.testing.assert_array_equal(out[inside], raw[inside])


def test_peak_normalising_divides_by_the_largest_magnitude(
    loud_tts: PocketTTS, voice_path: Path, raw: np.ndarray
) -> None:
    voice = loud_tts.voices.load(voice_path)
    normalised = loud_tts.synthesize(
        TEXT, voice, options=SpeakOptions(seed=3, output_chain=False, peak_normalize=True)
    )
    assert np.abs(normalised).max() == 1.0 and normalised.min() == -1.0
    np.testing.assert_allclose(normalised, raw / np.abs(raw).max(), atol=1e-6)
    np.testing.assert_array_equal(peak_normalize(raw), normalised)


def test_the_output_chain_ends_at_full_scale(
    loud_tts: PocketTTS, voice_path: Path, raw: np.ndarray
) -> None:
    voice = loud_tts.voices.load(voice_path)
    chained = loud_tts.synthesize(TEXT, voice, options=SpeakOptions(seed=3))
    filtered = OutputChain(24_000).process(raw)
    assert np.abs(filtered).max() > 1.0 and filtered.min() < 0 < filtered.max()
    assert np.abs(chained).max() == pytest.approx(1.0, abs=1e-6)
    np.testing.assert_allclose(chained, filtered / np.abs(filtered).max(), atol=1e-6)
    np.testing.assert_allclose(apply_output_chain(raw, 24_000), chained, atol=1e-6)


@pytest.mark.parametrize("filters", [False, True])
def test_the_file_writer_normalises_by_the_largest_magnitude(
    raw: np.ndarray, tmp_path: Path, filters: bool
) -> None:
    path = tmp_path / "loud.wav"
    with open_audio_writer(path, None, 24_000, filters=filters) as writer:
        for block in _blocks(raw):
            writer.write(block)
    out, _ = sf.read(path, dtype="int16")
    source = OutputChain(24_000).process(raw) if filters else raw
    expected = source / np.abs(source).max() * 32767
    assert np.abs(out).max() == 32767
    assert np.abs(out - expected).max() <= 0.5 + 1e-2


def test_without_peak_normalising_the_file_writer_saturates(raw: np.ndarray, tmp_path) -> None:
    path = tmp_path / "raw.flac"
    with open_audio_writer(path, None, 24_000, peak_normalize=False) as writer:
        for block in _blocks(raw):
            writer.write(block)
    out, _ = sf.read(path, dtype="int16")
    assert (out[raw > 1.0] == 32767).all() and (out[raw < -1.0] == -32767).all()
