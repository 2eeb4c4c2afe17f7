"""Same samples, same Ogg bytes (issue 32 item 5).

libsndfile takes an Ogg stream's serial number from the clock, so two encodings of the
same samples used to differ in the serial and in every page's checksum. Here the real
encoder (``AudioEncoder`` / ``encode_stream``, what the server sends and the CLI writes)
encodes the same samples twice in one process (libsndfile's generator moves on between
streams) and across two CLI runs; the pages are parsed from the Ogg definition (RFC 3533)
and each checksum is recomputed bit by bit here, so a wrong checksum update is caught even
where a reader would skip the page quietly.
"""

from __future__ import annotations

import io
import struct

import numpy as np
import pytest
import soundfile as sf

from pocketcli.audio.output import AudioEncoder, encode_stream
from tests.support import paths
from tests.support.cli import run

RATE = 24_000


def ogg_crc(data: bytes) -> int:
    """RFC 3533's checksum: CRC-32, polynomial 0x04C11DB7, MSB first, no initial value."""
    crc = 0
    for byte in data:
        crc ^= byte << 24
        for _ in range(8):
            crc = ((crc << 1) ^ 0x04C11DB7) if crc & 0x80000000 else crc << 1
            crc &= 0xFFFFFFFF
    return crc


def pages(blob: bytes) -> list[bytes]:
    out, at = [], 0
    while at < len(blob):
        assert blob[at : at + 4] == b"OggS", at
        n = blob[at + 26]
        size = 27 + n + sum(blob[at + 27 : at + 27 + n])
        out.append(blob[at : at + size])
        at += size
    return out


def check_pages(blob: bytes) -> int:
    """Every page's checksum right and one serial throughout; returns the serial."""
    found = pages(blob)
    assert len(found) >= 3
    serials = {struct.unpack("<I", p[14:18])[0] for p in found}
    assert len(serials) == 1, serials
    for p in found:
        zeroed = p[:22] + b"\0\0\0\0" + p[26:]
        assert struct.unpack("<I", p[22:26])[0] == ogg_crc(zeroed)
    return serials.pop()


def speech(seed: int, seconds: float = 1.5) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(int(RATE * seconds)) / RATE
    return (0.3 * np.sin(2 * np.pi * 220 * t) + 0.05 * rng.standard_normal(t.size)).astype(
        np.float32
    )


def encode(fmt: str, audio: np.ndarray, *, stream: bool) -> bytes:
    blocks = [audio[i : i + 1920] for i in range(0, audio.size, 1920)]
    if stream:
        return b"".join(encode_stream(blocks, fmt, RATE))
    out = io.BytesIO()  # a seekable file, as -o FILE writes
    encoder = AudioEncoder(out, fmt, RATE)
    for block in blocks:
        encoder.write(block)
    encoder.close()
    return out.getvalue()


@pytest.mark.parametrize("fmt", ["opus", "ogg"])
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "file"])
def test_the_same_samples_give_the_same_ogg_bytes(fmt: str, stream: bool) -> None:
    audio = speech(1)
    first, second = encode(fmt, audio, stream=stream), encode(fmt, audio, stream=stream)
    assert first == second
    check_pages(first)
    decoded, rate = sf.read(io.BytesIO(first), dtype="float32")
    assert decoded.size >= audio.size * rate // RATE * 0.95  # every page read back


def test_other_samples_give_another_serial() -> None:
    """Two utterances chained into one Ogg stream stay two logical streams."""
    a, b = encode("opus", speech(1), stream=True), encode("opus", speech(2), stream=True)
    assert check_pages(a) != check_pages(b)


def test_a_streamed_encoding_is_the_files() -> None:
    audio = speech(3)
    assert encode("opus", audio, stream=True) == encode("opus", audio, stream=False)


def test_two_cli_runs_with_one_seed_write_the_same_opus(tmp_path) -> None:
    pack = paths.TINY / "pack"
    outs = []
    for i in range(2):
        r = run("tts", "Same seed, same bytes.", "--model-dir", pack, "--seed", "5",
                "-o", "-", "--format", "opus")  # fmt: skip
        assert r.returncode == 0, r.stderr
        outs.append(r.stdout)
        target = tmp_path / f"{i}.opus"
        r = run("tts", "Same seed, same bytes.", "--model-dir", pack, "--seed", "5",
                "-o", target)  # fmt: skip
        assert r.returncode == 0, r.stderr
        outs.append(target.read_bytes())
    assert outs[0] == outs[2] and outs[1] == outs[3]
    check_pages(outs[0])
