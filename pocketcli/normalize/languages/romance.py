"""Gender agreement shared by Spanish, Portuguese and Italian number words.

Before a noun, these languages change the end of a cardinal ("un kilómetro",
"una hora", "duas horas", "doscientas libras"). Only the part after the last
"million" word agrees: "un millón de libras" stays masculine.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["agreeing_tail", "feminine_ordinal"]

_WORD_ENDING_O = re.compile(r"o\b")


def agreeing_tail(millions: str, change: Callable[[str], str]) -> Callable[[str], str]:
    """Apply `change` to the words after the last of the `millions` words (a regex)."""
    split = re.compile(rf"^(.*\b(?:{millions})\b\s*)?(.*)$", re.S)

    def apply(words: str) -> str:
        match = split.match(words)
        assert match is not None  # the pattern matches any text
        return (match[1] or "") + change(match[2])

    return apply


def feminine_ordinal(words: str) -> str:
    """ "vigésimo primero" -> "vigésima primera": every word's final -o becomes -a."""
    return _WORD_ENDING_O.sub("a", words)
