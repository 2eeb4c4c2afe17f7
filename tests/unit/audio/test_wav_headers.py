"""Every field of the WAV headers we write, checked against the RIFF/WAVE definition.

soundfile ignores the byte rate and the block alignment, stricter players do
not; so the bytes are parsed here with ``struct`` from the definition (RIFF
chunk, ``fmt `` PCM chunk, ``data`` chunk), for a file written by
``pockettts tts -o FILE`` and for the stream of ``-o -``, both from the real
console script. When SoX is installed (``apt-get install sox``) it reads
both too, and its decoded samples must be the bytes of our data chunk.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from tests.support.cli import run

RATE = 24_000
UNKNOWN = 0xFFFFFFFF  # a streamed header cannot know its sizes: "until the end of the stream"
WAVE_FORMAT_PCM = 1


@dataclass
class Parsed:
    riff_size: int
    fmt: dict[str, int]
    data_offset: int
    data_size: int
    chunks: list[bytes]


def parse(blob: bytes) -> Parsed:
    """A plain reading of the RIFF/WAVE layout (Microsoft's 1991 definition)."""
    assert blob[:4] == b"RIFF", blob[:4]
    (riff_size,) = struct.unpack_from("<I", blob, 4)
    assert blob[8:12] == b"WAVE"
    pos, fmt, chunks = 12, None, []
    while pos + 8 <= len(blob):
        cid = blob[pos : pos + 4]
        (size,) = struct.unpack_from("<I", blob, pos + 4)
        chunks.append(cid)
        if cid == b"fmt ":
            assert size in (16, 18), f"PCM fmt chunk of {size} bytes"
            names = ("format", "channels", "rate", "byte_rate", "block_align", "bits")
            fmt = dict(zip(names, struct.unpack_from("<HHIIHH", blob, pos + 8), strict=True))
        if cid == b"data":
            assert fmt is not None, "the fmt chunk must come before the data chunk"
            return Parsed(riff_size, fmt, pos + 8, size, chunks)
        pos += 8 + size + (size & 1)  # chunks are word-aligned
    raise AssertionError(f"no data chunk (chunks: {chunks})")


def check_fmt(fmt: dict[str, int]) -> None:
    assert fmt["format"] == WAVE_FORMAT_PCM
    assert fmt["channels"] == 1
    assert fmt["rate"] == RATE
    assert fmt["bits"] == 16
    assert fmt["block_align"] == fmt["channels"] * fmt["bits"] // 8 == 2
    assert fmt["byte_rate"] == fmt["rate"] * fmt["block_align"] == 48_000


def sox_samples(blob: bytes) -> np.ndarray | None:
    """SoX's own reading: header fields from ``sox --i``, samples decoded to raw s16le."""
    sox = shutil.which("sox")
    if sox is None:
        return None
    fields = {}
    for flag, name in (("-r", "rate"), ("-c", "channels"), ("-b", "bits"), ("-e", "encoding")):
        r = subprocess.run([sox, "--i", flag, "-"], input=blob, capture_output=True)
        assert r.returncode == 0, r.stderr
        fields[name] = r.stdout.decode().strip()
    assert fields == {
        "rate": str(RATE),
        "channels": "1",
        "bits": "16",
        "encoding": "Signed Integer PCM",
    }
    r = subprocess.run(
        [sox, "-t", "wav", "-", "-t", "raw", "-e", "signed", "-b", "16", "-L", "-"],
        input=blob,
        capture_output=True,
    )
    assert r.returncode == 0, r.stderr
    return np.frombuffer(r.stdout, "<i2")


def _speak(pack_dir: Path, voice_path: Path, output: str) -> bytes:
    model = ["--model-dir", str(pack_dir), "--voice-file", str(voice_path)]
    r = run("tts", "Headers are checked field by field.", "-o", output, *model, "--seed", "2", "-q")
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_file_header_is_exact(pack_dir, voice_path, tmp_path) -> None:
    out = tmp_path / "file.wav"
    _speak(pack_dir, voice_path, str(out))
    blob = out.read_bytes()
    p = parse(blob)
    check_fmt(p.fmt)
    assert p.riff_size == len(blob) - 8
    assert p.data_size % p.fmt["block_align"] == 0 and p.data_size > 1920 * 2
    end = p.data_offset + p.data_size
    assert end == len(blob)  # the data chunk runs to the end of the file, as RIFF says
    payload = np.frombuffer(blob[p.data_offset : end], "<i2")
    assert np.abs(payload).max() > 100
    decoded = sox_samples(blob)
    if decoded is not None:
        assert np.array_equal(decoded, payload)


def test_streamed_header_is_exact(pack_dir, voice_path) -> None:
    blob = _speak(pack_dir, voice_path, "-")
    p = parse(blob)
    check_fmt(p.fmt)
    assert p.chunks == [b"fmt ", b"data"] and p.data_offset == 44
    payload = blob[p.data_offset :]
    # Unknown sizes are the maximum (read as "until EOF"); known ones must be exact.
    assert p.riff_size in (UNKNOWN, len(blob) - 8)
    assert p.data_size in (UNKNOWN, len(payload))
    assert len(payload) % p.fmt["block_align"] == 0 and len(payload) % (1920 * 2) == 0
    samples = np.frombuffer(payload, "<i2")
    assert np.abs(samples).max() > 100
    decoded = sox_samples(blob)
    if decoded is not None:
        assert np.array_equal(decoded, samples)


@pytest.mark.skipif(shutil.which("sox") is None, reason="SoX is not installed")
def test_sox_is_a_real_second_reader(pack_dir, voice_path) -> None:
    """The SoX check itself bites: a header claiming 8-bit samples decodes differently."""
    blob = bytearray(_speak(pack_dir, voice_path, "-"))
    struct.pack_into("<HIIHH", blob, 22, 1, RATE, RATE, 1, 8)
    with pytest.raises(AssertionError):
        sox_samples(bytes(blob))


def test_a_wav_made_whole_says_its_true_sizes() -> None:
    """``encode_stream(..., samples=n)``, for audio made whole before it is sent (a
    non-streaming HTTP answer): the RIFF and data sizes are exact; a stream of unknown
    length says 0xFFFFFFFF ("until the end"), with the same samples after the header."""
    from pocketcli.audio.output import encode_stream

    audio = (0.3 * np.sin(np.arange(RATE) / 7.0)).astype(np.float32)
    blocks = [audio[i : i + 1920] for i in range(0, audio.size, 1920)]
    whole = b"".join(encode_stream(blocks, "wav", RATE, samples=audio.size))
    parsed = parse(whole)
    assert parsed.data_size == audio.size * 2 == len(whole) - parsed.data_offset
    assert parsed.riff_size == len(whole) - 8
    streamed = b"".join(encode_stream(blocks, "wav", RATE))
    assert parse(streamed).data_size == UNKNOWN and streamed[44:] == whole[44:]
