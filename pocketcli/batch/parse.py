"""Batch input: one utterance per line, with stable output names.

A line is either plain text or ``id|text``. Plain lines are named by line
number and a hash of their text, so re-running the same file skips what is
already done, and an edited line is made again instead of silently kept.
An id becomes a file name only if it is a plain name: it can never reach
outside the output directory. An id that already ends in ``.wav`` names the
file itself (``b.wav|...`` writes ``b.wav``). Two ids that name one file, even
only on a case-insensitive file system (``a`` and ``A``: macOS, Windows), are
refused on the later line, so a folder copied there loses nothing. A UTF-8 byte
order mark at the start is dropped. A line longer than ``MAX_LINE_BYTES`` is
refused (its record in the manifest must stay readable: see
``manifest.MAX_RECORD_BYTES``).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

_ID = re.compile(r"^[^\s|]{1,128}$")
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_PLAIN_NAME = re.compile(r"^line\d{5,}-[0-9a-f]{8}$")
_BOM = b"\xef\xbb\xbf"
MAX_LINE_BYTES = 256 << 10  # a quarter of a MiB of text: over an hour of speech


@dataclass(frozen=True)
class BatchItem:
    line_number: int
    name: str  # output file stem ("" when the line is unusable)
    text: str
    error: str | None = None  # why the line cannot be spoken


def _plain_name(line_number: int, text: str) -> str:
    digest = hashlib.sha1(text.encode("utf-8")).hexdigest()[:8]
    return f"line{line_number:05d}-{digest}"


def is_plain_name(name: str) -> bool:
    """True for the names of lines without an id (number and text hash)."""
    return bool(_PLAIN_NAME.match(name))


def _id_name(head: str) -> str:
    """The file stem an id names: ``b.wav`` is the file ``b.wav``, not ``b.wav.wav``."""
    return head[:-4] if head.lower().endswith(".wav") and len(head) > 4 else head


def _same_file(head: str, first: tuple[int, str]) -> str:
    """Why a line whose id names an earlier line's file is refused."""
    line, other = first
    if head == other:
        return f"id {head!r} already used on line {line}"
    if _id_name(head) == _id_name(other):
        return f"id {head!r} names the same file as line {line} ({other!r})"
    return (
        f"id {head!r} names the same file as line {line} ({other!r}) on a "
        "case-insensitive file system (macOS, Windows): give the lines other ids"
    )


def _bad_id(head: str) -> str:
    return (
        f"id {head!r} is not a plain file name (letters, digits, '.', '_' and '-'; no leading dot)"
    )


def parse_batch(data: bytes) -> list[BatchItem]:
    """Splits raw bytes into items; undecodable or unsafe lines become items with an error."""
    items: list[BatchItem] = []
    seen: dict[str, tuple[int, str]] = {}  # case-folded file stem: (line, id as written)
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    for number, raw in enumerate(data.splitlines(), start=1):
        if len(raw) > MAX_LINE_BYTES:
            error = f"the line is {len(raw)} bytes, more than {MAX_LINE_BYTES}: split it"
            items.append(BatchItem(number, "", "", error))
            continue
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            items.append(BatchItem(number, "", "", f"not UTF-8 text (byte {exc.start})"))
            continue
        if "\x00" in line:
            items.append(BatchItem(number, "", "", "contains NUL bytes"))
            continue
        if not line.strip():
            continue
        head, sep, rest = line.partition("|")
        if sep and _ID.match(head):
            name, text = _id_name(head), rest.strip()
            if not _SAFE_NAME.match(name) or name in (".", ".."):
                items.append(BatchItem(number, "", text, _bad_id(head)))
                continue
        else:
            head = name = _plain_name(number, text := line.strip())
        if not text:
            items.append(BatchItem(number, name, "", "no text after the id"))
            continue
        if (first := seen.get(name.lower())) is not None:
            items.append(BatchItem(number, name, text, _same_file(head, first)))
            continue
        seen[name.lower()] = (number, head)
        items.append(BatchItem(number, name, text))
    return items
