"""The text a command speaks or prints: from an argument, standard input or a file,
checked once and read with a bound.

Empty, binary (NUL bytes) or non-UTF-8 input is a usage error (exit 2) in
every subcommand, with the same words. Standard input and ``--input-file``
are read in blocks, each checked as it arrives, so endless or binary input
(``< /dev/zero``) is refused after its first block, not after filling memory;
and never more than ``POCKETTTS_MAX_INPUT_MB`` (default 64) MB are read. A
FIFO with no writer, a socket or a terminal given as ``--input-file`` is
refused before anything waits on it.
"""

from __future__ import annotations

import codecs
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from pocketcli.cli import clickcompat as click
from pocketcli.cli.stdio import was_closed
from pocketcli.errors import UserError
from pocketcli.filekind import describe_mode

MAX_INPUT_VARIABLE = "POCKETTTS_MAX_INPUT_MB"
DEFAULT_MAX_INPUT_MB = 64
_BLOCK = 1 << 16
# A batch file may hold a stray NUL on one line (that line fails alone); a run of this
# many is no text file at all.
_BINARY_RUN = b"\x00" * 4096


def max_input_bytes() -> int:
    """The bound on text read from stdin or a file (``POCKETTTS_MAX_INPUT_MB``)."""
    raw = os.environ.get(MAX_INPUT_VARIABLE, "").strip()
    try:
        mb = float(raw) if raw else DEFAULT_MAX_INPUT_MB
    except ValueError:
        mb = DEFAULT_MAX_INPUT_MB
    if not mb > 0 or mb != mb:  # noqa: PLR0124 - NaN
        mb = DEFAULT_MAX_INPUT_MB
    return int(min(mb, 1 << 20) * 1_000_000)


def read_text(words: str | None, what: str = "TEXT, --text") -> str:
    """``words`` if given, else standard input (unless it is a terminal), checked."""
    if words is None:
        if sys.stdin is None or was_closed("stdin") or sys.stdin.isatty():
            raise click.UsageError(f"no text: give {what}, or pipe text on standard input")
        words = _read_utf8(sys.stdin.buffer, "standard input")
    else:
        try:  # argv bytes that are not UTF-8 arrive as lone surrogates (surrogateescape)
            words.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise click.UsageError(
                f"the text argument is not UTF-8 text (character {exc.start})"
            ) from None
    if "\x00" in words:
        raise click.UsageError("the text contains NUL bytes: is it a binary file?")
    if not words.strip():
        raise click.UsageError("the text is empty")
    return words


def read_input_file(path: Path) -> bytes:
    """The bytes of ``--input-file`` (``-``: standard input), read with the bound; lines
    are checked later one by one, but endless or binary input is refused here."""
    if str(path) == "-":
        return _read_bounded(sys.stdin.buffer, "standard input", binary_run=True)
    f, first = _open_input(path)
    with f:
        return _read_bounded(f, str(path), binary_run=True, first=first)


def _read_utf8(stream: BinaryIO, name: str) -> str:
    decoder = codecs.getincrementaldecoder("utf-8")()
    parts: list[str] = []
    offset = 0

    def check(block: bytes, final: bool) -> None:
        nonlocal offset
        try:
            parts.append(decoder.decode(block, final))
        except UnicodeDecodeError as exc:
            byte = offset + exc.start - len(decoder.getstate()[0])
            raise click.UsageError(f"{name} is not UTF-8 text (byte {max(0, byte)})") from None
        if b"\x00" in block:
            raise click.UsageError("the text contains NUL bytes: is it a binary file?")
        offset += len(block)

    _read_bounded(stream, name, on_block=check)
    return "".join(parts)


def _read_bounded(
    stream: BinaryIO,
    name: str,
    *,
    binary_run: bool = False,
    on_block: Callable[[bytes, bool], None] | None = None,
    first: bytes = b"",
) -> bytes:
    """Blocks of ``stream`` (after ``first``) up to the bound, each checked as it comes."""
    limit = max_input_bytes()
    blocks: list[bytes] = []
    size = 0
    tail = b""
    while True:
        block, first = (first or stream.read(_BLOCK)), b""
        if not block:
            break
        if size == 0:
            _refuse_other_unicode(block, name)
        size += len(block)
        if size > limit:
            raise UserError(
                f"{name} holds more than {limit / 1_000_000:g} MB of text, the limit"
                f" (set {MAX_INPUT_VARIABLE} to raise it)"
            )
        if binary_run and _BINARY_RUN in tail + block:
            raise click.UsageError(f"{name} is not text (a run of NUL bytes): is it binary?")
        tail = block[-len(_BINARY_RUN) :]
        if on_block is not None:
            on_block(block, False)
        else:
            blocks.append(block)
    if on_block is not None:
        on_block(b"", True)
    return b"".join(blocks)


# Byte order marks of the encodings a text editor saves "Unicode" text in, besides UTF-8
# (whose mark is dropped where text is read). UTF-32's first: its LE mark begins as UTF-16's.
_OTHER_UNICODE = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)


def _refuse_other_unicode(first: bytes, name: str) -> None:
    """Text saved as UTF-16 or UTF-32 is refused as that, in one line with the fix (it
    used to be "not UTF-8 text (byte 0)", or a failure on every line of a batch)."""
    for mark, encoding in _OTHER_UNICODE:
        if first.startswith(mark):
            raise click.UsageError(
                f"{name} is {encoding} text (it starts with a {encoding} byte order mark);"
                f" pockettts reads UTF-8: convert it, e.g. iconv -f {encoding} -t UTF-8"
            )


def _open_input(path: Path) -> tuple[BinaryIO, bytes]:
    """Opens an input that may be a FIFO or a device without waiting on it; also returns
    what a FIFO already held."""
    try:
        mode = os.stat(path).st_mode
        if stat.S_ISSOCK(mode) or stat.S_ISDIR(mode) or stat.S_ISBLK(mode):
            raise UserError(f"cannot read {path}: it is {describe_mode(mode)}, not a text file")
        # Non-blocking open: a FIFO with no writer would block here for ever.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise UserError(f"cannot read {path}: {(exc.strerror or str(exc)).lower()}") from None
    f = os.fdopen(fd, "rb", buffering=0)
    if os.isatty(fd):
        f.close()
        raise UserError(f"cannot read {path}: it is a terminal; pipe the text or name a file")
    first = b""
    if stat.S_ISFIFO(mode):
        # Empty and non-blocking, a FIFO says end-of-file only when no one has it open
        # for writing; with a writer that has not written yet, "try again".
        try:
            first = os.read(fd, _BLOCK)
        except BlockingIOError:
            pass
        else:
            if not first:
                f.close()
                raise UserError(f"cannot read {path}: it is a FIFO (named pipe) with no writer")
    os.set_blocking(fd, True)
    return f, first
