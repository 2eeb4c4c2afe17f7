"""Same samples, same Ogg bytes: the stream serial number taken from the content.

libsndfile gives each Ogg stream it writes a serial number from the clock
(``psf_rand_int32``, seeded by ``gettimeofday``), so two encodings of the very
same samples differ in the serial and in every page's checksum. ``OggRestamp``
sits between libsndfile and the sink: it holds back the header pages until
the first page carrying audio (or the end), derives the serial from the bytes
held (a CRC-32 of the page bodies), and rewrites each page's serial and
checksum as it passes. Nothing else in a page changes; a sink sees no seeks.

The Ogg checksum is linear (polynomial 0x04C11DB7, no initial value, no final
XOR), so a page's new checksum is its old one XOR the checksum of the serial's
change alone, computed in O(log n) rather than by reading the page again.
"""

from __future__ import annotations

import struct
import zlib
from typing import BinaryIO

_POLY = 0x104C11DB7  # x^32 + ... (the Ogg CRC's generator, with its top bit)
_HEADER = 27  # bytes of a page header before its segment table
_SERIAL = slice(14, 18)
_CRC = slice(22, 26)


def _mulmod(a: int, b: int) -> int:
    """``a * b`` modulo the CRC polynomial over GF(2); ``a`` below 2**32."""
    result = 0
    while b:
        if b & 1:
            result ^= a
        b >>= 1
        a <<= 1
        if a >> 32:
            a ^= _POLY
    return result


def _xpow(n: int) -> int:
    """``x ** n`` modulo the CRC polynomial."""
    result, base = 1, 2
    while n:
        if n & 1:
            result = _mulmod(result, base)
        base = _mulmod(base, base)
        n >>= 1
    return result


def _restamped(page: bytes, serial: int) -> bytes:
    """``page`` (one whole Ogg page) with ``serial``, its checksum updated to match."""
    new = struct.pack("<I", serial)
    delta = int.from_bytes(bytes(a ^ b for a, b in zip(page[_SERIAL], new, strict=True)), "big")
    change = _mulmod(delta, _xpow(32 + 8 * (len(page) - _SERIAL.stop)))
    crc = struct.unpack("<I", page[_CRC])[0] ^ change
    return page[:14] + new + page[18:22] + struct.pack("<I", crc) + page[26:]


def _page_length(data: bytearray) -> int | None:
    """The length of the whole page at the start of ``data``, None while it is incomplete;
    0 when ``data`` does not start with a page (then it passes through as it is)."""
    if len(data) < _HEADER:
        return None if data == b"OggS"[: len(data)] or data[:4] == b"OggS" else 0
    if data[:4] != b"OggS":
        return 0
    segments = data[26]
    if len(data) < _HEADER + segments:
        return None
    size = _HEADER + segments + sum(data[_HEADER : _HEADER + segments])
    return size if len(data) >= size else None


class OggRestamp:
    """A write-only filter: Ogg pages in, the same pages with a content-derived serial out."""

    def __init__(self, out: BinaryIO) -> None:
        self._out = out
        self._buffer = bytearray()
        self._held: list[bytes] = []  # pages before the serial is known
        self._serial: int | None = None

    def write(self, data) -> int:
        self._buffer += bytes(data)
        while (size := _page_length(self._buffer)) is not None:
            if size == 0:  # not a page: pass it on unchanged
                self._emit(bytes(self._buffer))
                self._buffer.clear()
                break
            page = bytes(self._buffer[:size])
            del self._buffer[:size]
            self._page(page)
        return len(data)

    def _page(self, page: bytes) -> None:
        if self._serial is not None:
            self._out.write(_restamped(page, self._serial))
            return
        self._held.append(page)
        granule = struct.unpack("<q", page[6:14])[0]
        if granule > 0:  # the first page of audio: the serial is now the content's
            self._release()

    def _release(self) -> None:
        bodies = zlib.crc32(b"".join(page[_HEADER + page[26] :] for page in self._held))
        self._serial = bodies & 0x7FFFFFFF or 1
        held, self._held = self._held, []
        self._out.write(b"".join(_restamped(page, self._serial) for page in held))

    def _emit(self, data: bytes) -> None:
        if self._held:
            self._release()
        self._out.write(data)

    def seekable(self) -> bool:
        return False

    def flush(self) -> None:
        self._out.flush()

    def close(self) -> None:
        """Sends what is held (the pages of a stream with no audio page, any tail)."""
        if self._held:
            self._release()
        if self._buffer:
            data, self._buffer = bytes(self._buffer), bytearray()
            self._out.write(data)
