"""Reading recordings and preparing voice prompts, without torch.

Files are written by soundfile (and PyAV for M4A) in the test itself, then
read back through ``read_audio`` / ``load_prompt``; the resampling path is
compared with scipy's ``resample_poly`` (what pocket-tts calls) directly.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from pocketcli.audio.read import AudioReadError, read_audio
from pocketcli.errors import UserError
from pocketcli.voices.prompt import (
    PromptError,
    VoiceWarning,
    end_on_pause,
    load_prompt,
    prepare_prompt,
)
from tests.support.paths import DATA

SPEECH = DATA / "speech"
ALBA = SPEECH / "kyutai-tts-voices" / "alba-mackenna_casual.wav"  # 48 kHz
LIBRI = SPEECH / "librispeech" / "librispeech_test_clean_6930-75918-0000.wav"  # 16 kHz


def _tone(seconds: float, rate: int, freq: float = 220.0, level: float = 0.3) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (level * np.sin(2 * np.pi * freq * t) * (0.6 + 0.4 * np.sin(2 * np.pi * 3 * t))).astype(
        np.float32
    )


def resample_poly(x: np.ndarray, up: int, down: int) -> np.ndarray:
    """scipy's resample_poly, the oracle (scipy comes with the test extra)."""
    return pytest.importorskip("scipy.signal").resample_poly(x, up, down)


def _collect() -> tuple[list[str], Callable[[str], None]]:
    seen: list[str] = []
    return seen, seen.append


@pytest.mark.parametrize("path, rate", [(ALBA, 48_000), (LIBRI, 16_000)])
def test_speech_is_resampled_like_pocket_tts(path: Path, rate: int) -> None:
    decoded = read_audio(path)
    assert decoded.sample_rate == rate and decoded.channels == 1
    raw, _ = sf.read(path, dtype="float32")
    assert np.array_equal(decoded.samples, raw)
    expected = resample_poly(raw, 24_000 // 8_000, rate // 8_000)
    prompt = prepare_prompt(decoded.samples, rate, 24_000)
    trimmed, kept = end_on_pause(expected.astype(np.float32), 24_000)
    assert prompt.shape == trimmed.shape
    assert np.abs(prompt - trimmed).max() < 1e-6
    assert abs(kept - expected.size) < 0.5 * 24_000  # end_on_pause cut only silence
    assert prompt[-int(0.08 * 24_000) :].max() == 0.0  # ends on 80 ms of zeros


def test_stereo_is_mixed_to_the_mean(tmp_path: Path) -> None:
    left, right = _tone(1.5, 44_100, 220.0), _tone(1.5, 44_100, 330.0, 0.1)
    path = tmp_path / "stereo.wav"
    sf.write(path, np.stack([left, right], axis=1), 44_100, subtype="FLOAT")
    decoded = read_audio(path)
    assert decoded.channels == 2 and decoded.sample_rate == 44_100
    assert np.array_equal(decoded.samples, (np.stack([left, right], 1)).mean(axis=1))
    four = tmp_path / "four.flac"
    sf.write(four, np.stack([left, left, right, right], axis=1), 44_100, subtype="PCM_24")
    mixed = read_audio(four)
    assert mixed.channels == 4
    assert np.abs(mixed.samples - (left + right) / 2).max() < 1e-6


@pytest.mark.parametrize(
    "fmt, subtype, rate",
    [
        ("WAV", "PCM_16", 22_050),
        ("FLAC", "PCM_16", 16_000),
        ("OGG", "VORBIS", 44_100),
        ("OGG", "OPUS", 48_000),
        ("MP3", "MPEG_LAYER_III", 32_000),
    ],
)
def test_formats_soundfile_reads(tmp_path: Path, fmt: str, subtype: str, rate: int) -> None:
    audio = _tone(2.0, rate)
    path = tmp_path / f"voice.{fmt.lower()}"
    sf.write(path, audio, rate, format=fmt, subtype=subtype)
    decoded = read_audio(path)
    assert decoded.sample_rate == rate
    n = min(decoded.samples.size, audio.size)
    assert abs(decoded.samples.size - audio.size) < 0.05 * rate  # codec padding at most
    lag = _best_lag(decoded.samples, audio)
    a, b = decoded.samples[lag:n], audio[: n - lag]
    assert np.corrcoef(a, b)[0, 1] > 0.95
    prompt = load_prompt(path, 24_000)
    assert 1.9 * 24_000 < prompt.size < 2.2 * 24_000


def _best_lag(decoded: np.ndarray, original: np.ndarray) -> int:
    """Lossy codecs may delay the signal a little: find the lag with best correlation."""
    n = min(decoded.size, original.size) - 4000
    scores = [float(np.dot(decoded[lag : lag + n], original[:n])) for lag in range(0, 3000, 1)]
    return int(np.argmax(scores))


def test_m4a_through_pyav(tmp_path: Path) -> None:
    av = pytest.importorskip("av")
    rate = 44_100
    audio = _tone(2.0, rate)
    path = tmp_path / "voice.m4a"
    with av.open(str(path), "w") as out:
        stream = out.add_stream("aac", rate=rate, layout="mono")
        for start in range(0, audio.size, 1024):
            frame = av.AudioFrame.from_ndarray(
                audio[None, start : start + 1024], format="fltp", layout="mono"
            )
            frame.sample_rate = rate
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    decoded = read_audio(path)
    assert decoded.sample_rate == rate and decoded.channels == 1
    assert abs(decoded.samples.size - audio.size) < 0.1 * rate
    lag = _best_lag(decoded.samples, audio)
    n = min(decoded.samples.size - lag, audio.size)
    assert np.corrcoef(decoded.samples[lag : lag + n], audio[:n])[0, 1] > 0.95


def test_m4a_without_the_decoder_names_the_extra(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "voice.m4a"
    path.write_bytes(b"\x00\x00\x00\x20ftypM4A \x00\x00\x02\x00" + b"\x00" * 200)
    monkeypatch.setitem(sys.modules, "av", None)  # import av -> ImportError
    with pytest.raises(AudioReadError, match=r"pip install 'pockettts\[m4a\]'"):
        read_audio(path)


@pytest.mark.parametrize(
    "content", [b"this is not audio at all\n" * 20, b"RIFF\x24\x00\x00\x00WAVEfmt " + b"\x01" * 40]
)
def test_unreadable_files_are_one_line_user_errors(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "bad.wav"
    path.write_bytes(content)
    with pytest.raises(AudioReadError) as info:
        read_audio(path)
    assert isinstance(info.value, UserError)
    assert "\n" not in str(info.value) and "cannot read" in str(info.value)


def test_missing_and_empty_files(tmp_path: Path) -> None:
    with pytest.raises(AudioReadError, match="not found"):
        read_audio(tmp_path / "nope.wav")
    empty = tmp_path / "empty.wav"
    sf.write(empty, np.zeros(0, np.float32), 24_000)
    with pytest.raises(AudioReadError, match="no audio samples"):
        read_audio(empty)


def test_only_the_first_30_seconds_are_used() -> None:
    audio = np.concatenate([_tone(20.0, 16_000), _tone(20.0, 16_000, 330.0)])
    seen, warn = _collect()
    prompt = prepare_prompt(audio, 16_000, 24_000, warn)
    assert len(seen) == 1 and "40.0 s" in seen[0] and "first 30 s" in seen[0]
    expected = resample_poly(audio[: 30 * 16_000], 3, 2)
    trimmed = end_on_pause(expected.astype(np.float32), 24_000)[0]
    assert prompt.shape == trimmed.shape
    assert np.abs(prompt - trimmed).max() < 1e-6


def test_reading_stops_at_30_seconds_and_reports_the_whole_length(tmp_path: Path) -> None:
    path = tmp_path / "long.flac"
    sf.write(path, _tone(45.0, 8_000), 8_000)
    decoded = read_audio(path, max_seconds=30.0)
    assert decoded.samples.size == 30 * 8_000 and decoded.total_seconds == pytest.approx(45.0)
    with pytest.warns(VoiceWarning, match="45.0 s long"):
        load_prompt(path, 24_000)


def test_short_audio_is_refused() -> None:
    with pytest.raises(PromptError, match="too short for voice cloning: 0.60 s"):
        prepare_prompt(_tone(0.6, 24_000), 24_000, 24_000)
    speech_then_silence = np.concatenate([_tone(0.5, 24_000), np.zeros(48_000, np.float32)])
    with pytest.raises(PromptError, match="only 0.50 s before its trailing silence"):
        prepare_prompt(speech_then_silence, 24_000, 24_000)


@pytest.mark.parametrize(
    "audio, message",
    [
        (np.zeros(48_000, np.float32), "silent .peak -inf dBFS"),
        (_tone(2.0, 24_000, level=1e-4), "silent .peak -80 dBFS"),
    ],
)
def test_silence_is_refused(audio: np.ndarray, message: str) -> None:
    with pytest.raises(PromptError, match=message):
        prepare_prompt(audio, 24_000, 24_000)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_and_inf_are_refused(bad: float) -> None:
    audio = _tone(2.0, 24_000)
    audio[1000] = bad
    with pytest.raises(PromptError, match="1 NaN or infinite sample"):
        prepare_prompt(audio, 24_000, 24_000)


def test_clipping_is_reported_and_the_audio_used() -> None:
    audio = np.clip(_tone(2.0, 24_000, level=3.0), -1.0, 1.0)
    seen, warn = _collect()
    prompt = prepare_prompt(audio, 24_000, 24_000, warn)
    assert prompt.size > 24_000
    assert len(seen) == 1 and "is clipped" in seen[0] and "digital full scale" in seen[0]
    clean, quiet = _collect()
    prepare_prompt(_tone(2.0, 24_000), 24_000, 24_000, quiet)
    assert clean == []


def test_int16_and_bad_arrays() -> None:
    audio = _tone(2.0, 24_000)
    as_int = np.round(audio * 32767).astype(np.int16)
    a = prepare_prompt(as_int, 24_000, 24_000)
    b = prepare_prompt(as_int.astype(np.float32) / 32768, 24_000, 24_000)
    assert np.array_equal(a, b)
    with pytest.raises(PromptError, match="samples must be float"):
        prepare_prompt(audio.astype(np.int32), 24_000, 24_000)
    with pytest.raises(PromptError, match="shape"):
        prepare_prompt(audio.reshape(1, 1, -1), 24_000, 24_000)
    with pytest.raises(PromptError, match="sample rate"):
        prepare_prompt(audio, 0, 24_000)


def test_end_on_pause_trims_fades_and_pads() -> None:
    speech = _tone(1.5, 24_000)
    audio = np.concatenate([speech, np.zeros(24_000, np.float32)])
    out, kept = end_on_pause(audio, 24_000)
    assert kept == speech.size
    assert out.size == kept + int(0.08 * 24_000)
    fade = int(0.02 * 24_000)
    assert np.array_equal(out[: kept - fade], speech[: kept - fade])
    ramp = out[kept - fade : kept] / speech[kept - fade : kept]
    assert ramp[0] == pytest.approx(1.0) and ramp[-1] == 0.0
    assert np.all(np.diff(ramp) <= 1e-6)
