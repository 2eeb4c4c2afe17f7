"""Reading a recording costs what its first 30 s of mono audio cost, whatever its header
claims; special files are refused before they are opened."""

from __future__ import annotations

import os
import socket
import struct
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from pocketcli.audio.read import MAX_CHANNELS, MAX_SAMPLE_RATE, AudioReadError, read_audio
from tests.cli.test_clone import _one_line_error
from tests.support.cli import run


def _claim_frames(flac: Path, frames: int) -> None:
    """Rewrites STREAMINFO's 36-bit total-samples field: the header lies about the length."""
    data = bytearray(flac.read_bytes())
    assert data[:4] == b"fLaC"
    (packed,) = struct.unpack(">Q", data[18:26])  # rate:20 channels:3 bits:5 total:36
    packed = (packed & ~((1 << 36) - 1)) | frames
    data[18:26] = struct.pack(">Q", packed)
    flac.write_bytes(bytes(data))


def test_a_many_channel_recording_is_mixed_block_by_block(tmp_path) -> None:
    rate, channels = 8_000, 8
    rng = np.random.default_rng(1)
    audio = (0.1 * rng.standard_normal((40 * rate, channels))).astype(np.float32)
    path = tmp_path / "eight.flac"
    sf.write(path, audio, rate)
    tracemalloc.start()
    try:
        decoded = read_audio(path, max_seconds=30)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    mono_bytes = 30 * rate * 4
    assert decoded.samples.shape == (30 * rate,) and decoded.channels == channels
    assert decoded.total_seconds == pytest.approx(40.0)
    expected = sf.read(path, dtype="float32", frames=30 * rate)[0].mean(axis=1)
    np.testing.assert_allclose(decoded.samples, expected, rtol=1e-6, atol=1e-7)
    # All 8 channels of 30 s at once would be 8 x mono_bytes.
    assert peak < 3 * mono_bytes, peak


def test_a_flac_claiming_an_hour_at_655_khz_is_refused_from_its_header(pack_dir, tmp_path):
    path = tmp_path / "huge.flac"
    sf.write(path, np.full((6_553, 8), 0.1, np.float32), 655_350)
    _claim_frames(path, 60 * 655_350)
    assert sf.info(str(path)).frames == 60 * 655_350
    with pytest.raises(AudioReadError, match=f"655350 Hz; at most {MAX_SAMPLE_RATE} Hz"):
        read_audio(path, max_seconds=30)
    out = tmp_path / "v.safetensors"
    r = run("clone", path, "-o", out, "--model-dir", pack_dir)
    _one_line_error(r, 1, b"huge.flac has a sample rate of 655350 Hz")
    assert not out.exists()


def test_too_many_channels_are_refused_from_the_header(tmp_path) -> None:
    path = tmp_path / "wide.wav"
    sf.write(path, np.zeros((100, MAX_CHANNELS + 1), np.float32), 24_000)
    with pytest.raises(AudioReadError, match=f"{MAX_CHANNELS + 1} channels; at most"):
        read_audio(path)


def _fifo(tmp_path: Path) -> Path:
    path = tmp_path / "voice.wav"
    os.mkfifo(path)  # no writer: opening it for reading would block for ever
    return path


def _socket(tmp_path: Path) -> Path:
    path = tmp_path / "voice.sock"
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(path))
    s.close()
    return path


@pytest.mark.parametrize(
    "make, kind",
    [
        (_fifo, b"is a FIFO (named pipe)"),
        (lambda p: Path("/dev/zero"), b"/dev/zero is a character device"),
        (_socket, b"is a socket"),
        (lambda p: p, b"is a folder, not a file"),
    ],
)
def test_special_files_are_refused_as_recordings(pack_dir, tmp_path, make, kind) -> None:
    path = make(tmp_path)
    out = tmp_path / "v.safetensors"
    _one_line_error(run("clone", path, "-o", out, "--model-dir", pack_dir), 1, kind)
    wav = tmp_path / "o.wav"
    r = run("tts", "hi", "--clone-voice", path, "-o", wav, "--model-dir", pack_dir)
    assert r.returncode in (1, 2) and kind in r.stderr and b"Traceback" not in r.stderr, r.stderr
    assert not out.exists() and not wav.exists()


def test_a_header_that_overstates_the_length_reads_what_is_there(tmp_path) -> None:
    # libsndfile fails at the real end; the fallback decoder (PyAV, when installed) reads
    # the 8 channels packed: planar 8-channel frames crashed the process.
    rate = 16_000
    audio = (0.1 * np.random.default_rng(2).standard_normal((2 * rate, 8))).astype(np.float32)
    path = tmp_path / "lying.flac"
    sf.write(path, audio, rate)
    expected = sf.read(path, dtype="float32")[0].mean(axis=1)
    _claim_frames(path, 3600 * rate)
    try:
        decoded = read_audio(path, max_seconds=30)
    except AudioReadError as exc:  # without PyAV: one clear error is the contract
        assert "lying.flac" in str(exc)
    else:
        assert decoded.channels == 8 and decoded.samples.shape[0] == 2 * rate
        np.testing.assert_allclose(decoded.samples, expected, atol=1e-4)


@pytest.mark.parametrize("value", [1e30, 3e38, 2000.0])
def test_samples_far_beyond_full_scale_are_refused_without_numpy_noise(tmp_path, value):
    import warnings

    from pocketcli.voices.prompt import PromptError, load_prompt

    path = tmp_path / "loud.wav"
    audio = np.where(np.arange(48_000) % 2, value, -value).astype(np.float32)
    sf.write(path, audio, 24_000, subtype="FLOAT")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's overflow warning would raise here
        with pytest.raises(PromptError, match="far beyond full scale"):
            load_prompt(path, 24_000, on_warning=lambda m: None)


def _damaged_mp3(tmp_path: Path) -> Path:
    audio = (0.3 * np.sin(np.arange(48_000) / 9.0)).astype(np.float32)
    good = tmp_path / "good.mp3"
    sf.write(good, audio, 24_000, format="MP3")
    data = bytearray(good.read_bytes())
    for i in range(200, len(data), 37):  # scribble over the frames: libmpg123 resyncs
        data[i] = (data[i] * 7 + 13) & 255
    bad = tmp_path / "bad.mp3"
    bad.write_bytes(bytes(data[: len(data) // 2]))
    return bad


def test_a_damaged_mp3_prints_none_of_the_decoders_noise(pack_dir, tmp_path) -> None:
    r = run(
        "clone", _damaged_mp3(tmp_path), "-o", tmp_path / "v.safetensors", "--model-dir", pack_dir
    )
    assert r.returncode == 1, r.stderr
    lines = r.stderr.decode().splitlines()
    assert all(line.startswith("pockettts: ") for line in lines), lines


def test_garbage_named_mp3_says_damaged_not_a_pipe(pack_dir, tmp_path) -> None:
    path = tmp_path / "noise.mp3"
    path.write_bytes(b"ID3\x03\x00\x00\x00\x00\x00\x10" + bytes(300) + b"\xff\xfb" + bytes(5000))
    r = run("clone", path, "-o", tmp_path / "v.safetensors", "--model-dir", pack_dir)
    _one_line_error(r, 1, b"noise.mp3")
    assert b"pipe" not in r.stderr and b"does not exist" not in r.stderr, r.stderr
