"""The items markup turns into, and the collector that keeps them in order.

Shared by the inline `[pause]` reader and the SSML reader: text between two
pauses becomes one `Speech`, never merged across a `Pause`; pauses above
`MAX_PAUSE_SECONDS` are capped with a warning; a sentence boundary makes the
text so far end with a sentence mark so the chunker splits there.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from pocketcli.errors import MarkupError as MarkupError  # defined there; re-exported

__all__ = [
    "BREAK_STRENGTHS",
    "DEFAULT_PAUSE_SECONDS",
    "MAX_PAUSE_SECONDS",
    "MarkupError",
    "Pause",
    "Speech",
    "Timeline",
    "Warn",
    "line_and_column",
    "parse_duration",
]

DEFAULT_PAUSE_SECONDS = 0.5
MAX_PAUSE_SECONDS = 10.0
# SSML <break strength>: "medium" is also what a bare <break/> means.
BREAK_STRENGTHS = {
    "none": 0.0,
    "x-weak": 0.1,
    "weak": 0.25,
    "medium": 0.5,
    "strong": 1.0,
    "x-strong": 2.0,
}

_DURATION = re.compile(r"\s*(?P<n>\d{1,6}(?:\.\d*)?|\.\d+)\s*(?P<unit>ms|s)?\s*", re.IGNORECASE)
_SENTENCE_END = ".!?…"
_CLOSERS = "\"')]»”’"


@dataclass(frozen=True)
class Speech:
    """Text to speak (not yet normalised, except `<say-as>` content). ``written``: the
    text as the user wrote it, where that differs (`<say-as>`'s content as given: word
    timings caption it, not its reading); None: ``text``."""

    text: str
    written: str | None = field(default=None, compare=False)

    @property
    def as_written(self) -> str:
        return self.text if self.written is None else self.written


@dataclass(frozen=True)
class Pause:
    """Silence of `seconds` between the speech around it."""

    seconds: float


Warn = Callable[[str], None]


def parse_duration(value: str) -> float | None:
    """Seconds for "500ms", "1.5s" or "2" (seconds); None if it is not a duration."""
    match = _DURATION.fullmatch(value)
    if match is None:
        return None
    seconds = float(match["n"])
    return seconds / 1000 if (match["unit"] or "s").lower() == "ms" else seconds


class Timeline:
    """Collects speech and pauses in order; text between two pauses becomes one `Speech`."""

    def __init__(self, warn: Warn) -> None:
        self._items: list[Speech | Pause] = []
        self._text: list[str] = []
        self._written: list[str] = []  # the same, as the user wrote it
        self._warn = warn

    def say(self, text: str, written: str | None = None) -> None:
        """``text`` to speak; ``written``: what the user wrote for it (None: ``text``)."""
        self._text.append(text)
        self._written.append(text if written is None else written)

    def pause(self, seconds: float, where: str) -> None:
        if seconds > MAX_PAUSE_SECONDS:
            self._warn(f"pause of {seconds:g} s {where} capped at {MAX_PAUSE_SECONDS:g} s")
            seconds = MAX_PAUSE_SECONDS
        if seconds <= 0:
            return
        self._flush()
        self._items.append(Pause(seconds))

    def end_sentence(self) -> None:
        """Make the text so far end with a sentence mark, so the chunker splits here."""
        self._text = _ended(self._text)
        self._written = _ended(self._written)

    def _flush(self) -> None:
        text = " ".join("".join(self._text).split())
        written = " ".join("".join(self._written).split())
        if text:
            self._items.append(Speech(text, None if written == text else written))
        self._text, self._written = [], []

    def items(self) -> list[Speech | Pause]:
        self._flush()
        return list(self._items)


def _ended(pieces: list[str]) -> list[str]:
    """``pieces`` joined, ending with a sentence mark (added before closing quotes)."""
    text = "".join(pieces).rstrip()
    body = text.rstrip(_CLOSERS)
    if body.strip() and body[-1] not in _SENTENCE_END:
        text = body.rstrip(",;:-–— ") + "." + text[len(body) :]
    return [text + " "] if text else []


def line_and_column(text: str, position: int) -> tuple[int, int]:
    """1-based line and column of `position` in `text`."""
    line = text.count("\n", 0, position) + 1
    return line, position - (text.rfind("\n", 0, position) + 1) + 1
