"""Batch input: one utterance per line, with stable output names.

A line is either plain text or ``id|text``; a file whose first line is a JSON object
with a ``text`` is JSON lines (``{"id": ..., "text": ...}``), and one whose first line is
the header ``id,text`` a CSV of those fields (an empty id: a line without one). Plain
lines are named by line number and a hash of their text, so re-running the same file skips what is
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

import csv
import hashlib
import json
import re
from collections.abc import Callable
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
    shown = repr(head) if len(head) <= 140 else f"{head[:100]!r}... ({len(head)} characters)"
    return (
        f"id {shown} is not a plain file name (letters, digits, '.', '_' and '-'; no leading dot)"
    )


def parse_batch(data: bytes) -> list[BatchItem]:
    """Splits raw bytes into items; undecodable or unsafe lines become items with an error."""
    items: list[BatchItem] = []
    seen: dict[str, tuple[int, str]] = {}  # case-folded file stem: (line, id as written)
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    lines = data.splitlines()
    fields = _fields_of(lines)
    header = _first_line(lines) if fields is _csv_fields else 0
    for number, raw in enumerate(lines, start=1):
        line, error = _decoded(raw)
        if error is not None:
            items.append(BatchItem(number, "", "", error))
            continue
        if not line.strip() or number == header:
            continue  # blank, or the CSV's header
        head, text, error = fields(line)
        if error is not None:
            items.append(BatchItem(number, "", "", error))
            continue
        items.append(_item(number, head, text, seen))
    return items


def _decoded(raw: bytes) -> tuple[str, str | None]:
    """The line as text, or why it is refused."""
    if len(raw) > MAX_LINE_BYTES:
        return "", f"the line is {len(raw)} bytes, more than {MAX_LINE_BYTES}: split it"
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return "", f"not UTF-8 text (byte {exc.start})"
    if "\x00" in line:
        return "", "contains NUL bytes"
    return line, None


def _item(number: int, head: str | None, text: str, seen: dict[str, tuple[int, str]]) -> BatchItem:
    """The item of a line whose id (None: no id) and text are known."""
    if head is not None:
        name = _id_name(head)
        if not _SAFE_NAME.match(name) or name in (".", ".."):
            return BatchItem(number, "", text, _bad_id(head))
    else:
        head = name = _plain_name(number, text)
    if not text:
        return BatchItem(number, name, "", "no text after the id")
    if (first := seen.get(name.lower())) is not None:
        return BatchItem(number, name, text, _same_file(head, first))
    seen[name.lower()] = (number, head)
    return BatchItem(number, name, text)


Fields = Callable[[str], tuple[str | None, str, str | None]]  # line -> id, text, error


def _text_fields(line: str) -> tuple[str | None, str, str | None]:
    """``id|text`` or plain text."""
    head, sep, rest = line.partition("|")
    if sep and _ID.match(head):
        return head, rest.strip(), None
    return None, line.strip(), None


def _json_object(line: str) -> dict | None:
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):  # RecursionError: nested past the parser
        return None
    return value if isinstance(value, dict) else None


def _json_fields(line: str) -> tuple[str | None, str, str | None]:
    """A JSON line: ``{"id": "...", "text": "..."}`` (``id`` optional; other keys ignored)."""
    record = _json_object(line)
    if record is None:
        return None, "", 'not a JSON object (this file is JSON lines: {"id": ..., "text": ...})'
    text, head = record.get("text"), record.get("id")
    if not isinstance(text, str):
        return None, "", "no 'text' string in this JSON line"
    if isinstance(head, bool) or (head is not None and not isinstance(head, str | int)):
        return None, "", "its 'id' is neither a string nor a number"
    return (None if head in (None, "") else str(head)), text.strip(), None


def _csv_fields(line: str) -> tuple[str | None, str, str | None]:
    """A row of a CSV whose header is ``id,text``: an empty id is a line without one."""
    try:
        row = next(csv.reader([line], strict=True))
    except (csv.Error, StopIteration):
        row = []
    if len(row) != 2:
        return None, "", "not a row of two fields id,text (quote a text that holds commas)"
    head, text = row[0].strip(), row[1].strip()
    return (head or None), text, None


def _first_line(lines: list[bytes]) -> int:
    """The number of the first line that is not blank (0: none)."""
    return next((n for n, raw in enumerate(lines, start=1) if raw.strip()), 0)


def _fields_of(lines: list[bytes]) -> Fields:
    """How the file's lines are read, from its first line that is not blank: a JSON object
    with a ``text`` starts JSON lines, an ``id,text`` header a CSV, anything else text."""
    first = _first_line(lines)
    if not first or len(lines[first - 1]) > MAX_LINE_BYTES:
        return _text_fields
    head = lines[first - 1].decode("utf-8", "replace").strip()
    if head.startswith("{") and "text" in (_json_object(head) or {}):
        return _json_fields
    if "".join(head.lower().split()) == "id,text":
        return _csv_fields
    return _text_fields
