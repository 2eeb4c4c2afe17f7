"""Batch input: one utterance per line, with stable output names.

A line is either plain text or ``id|text``. Plain lines are named by line
number and a hash of their text, so re-running the same file skips what is
already done, and an edited line is made again instead of silently kept.
An id becomes a file name only if it is a plain name: it can never reach
outside the output directory.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

_ID = re.compile(r"^[^\s|]{1,128}$")
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_PLAIN_NAME = re.compile(r"^line\d{5,}-[0-9a-f]{8}$")


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


def parse_batch(data: bytes) -> list[BatchItem]:
    """Splits raw bytes into items; undecodable or unsafe lines become items with an error."""
    items: list[BatchItem] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(data.splitlines(), start=1):
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
            name, text = head, rest.strip()
            if not _SAFE_NAME.match(name) or name in (".", ".."):
                items.append(
                    BatchItem(
                        number,
                        "",
                        text,
                        f"id {name!r} is not a plain file name"
                        " (letters, digits, '.', '_' and '-'; no leading dot)",
                    )
                )
                continue
        else:
            text = line.strip()
            name = _plain_name(number, text)
        if not text:
            items.append(BatchItem(number, name, "", "no text after the id"))
            continue
        if name in seen:
            items.append(
                BatchItem(number, name, text, f"id {name!r} already used on line {seen[name]}")
            )
            continue
        seen[name] = number
        items.append(BatchItem(number, name, text))
    return items
