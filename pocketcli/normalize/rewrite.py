"""The one way passes replace matched text, so spacing and sentence ends stay right.

Spoken words must not glue to their neighbours ("COVID19" -> "COVID
nineteen"), and a pass that swallows a period must know whether that period
also ended the sentence, because the chunker splits at sentence marks.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["ends_sentence_at", "previous_word", "substitute", "tidy_spaces"]

_SENTENCE_STARTS = re.compile(r"\s*(?:$|\n|[A-ZÀ-ÝĀ-Ž\"'“«(])")
_LAST_WORD = re.compile(r"(\w+)\W*$")


def substitute(
    pattern: re.Pattern[str], text: str, say: Callable[[re.Match[str]], str | None]
) -> str:
    """`pattern.sub` where `say` returns the words (None keeps the match as it was).

    A space is put between the words and a letter or digit they would touch;
    text removed from between two letters or digits leaves a space.
    """

    def replace(match: re.Match[str]) -> str:
        words = say(match)
        if words is None:
            return match[0]
        start, end = match.span()
        if not words:
            touching = start > 0 and end < len(text)
            return " " if touching and text[start - 1].isalnum() and text[end].isalnum() else ""
        if start > 0 and text[start - 1].isalnum() and words[0].isalnum():
            words = " " + words
        if end < len(text) and text[end].isalnum() and words[-1].isalnum():
            words += " "
        return words

    return pattern.sub(replace, text)


def ends_sentence_at(text: str, position: int) -> bool:
    """Whether a period just before `position` reads as a sentence end.

    True at the end of the text or of a line, or before a capital letter or
    an opening quote or bracket.
    """
    return _SENTENCE_STARTS.match(text, position) is not None


def previous_word(text: str, position: int) -> str:
    """The word before `position` (looking back over spaces and punctuation), or ""."""
    match = _LAST_WORD.search(text, max(0, position - 40), position)
    return match[1] if match else ""


_COMMA_BETWEEN_WORDS = re.compile(r"(?<=[^\W\d_]),(?=[^\W\d_])")


def tidy_spaces(text: str) -> str:
    """One space between words (and after a comma between words), no blank lines."""
    text = _COMMA_BETWEEN_WORDS.sub(", ", text)
    lines = (" ".join(line.split()) for line in text.split("\n"))
    return "\n".join(line for line in lines if line)
