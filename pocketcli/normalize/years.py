"""Years where the text shows a number is one: "in 1990", "1990-2000", "the 1990s".

English, German and Dutch say years differently from other numbers
("nineteen ninety", "neunzehnhundertneunzig"); the Romance languages say a
year as its cardinal, so for them only ranges and decades change anything.
A four-digit number from 1000 to 2099 is a year right after a word of the
language's `year_words` ("in", "since", "im Jahr"...), in a range of two such
numbers, or with a decade suffix ("1990s", "1990er"; also "'90s", "90er"). In English a
round number in the plural before "of" is an amount: "100s of people" is "hundreds of people".
"""

from __future__ import annotations

import re

from pocketcli.normalize import numbers
from pocketcli.normalize.languages.base import Language
from pocketcli.normalize.rewrite import substitute

__all__ = ["read_years"]

_YEAR = r"(?:1\d{3}|20\d{2})"
_RANGE = re.compile(rf"(?<![\w.,-])(?P<a>{_YEAR})\s?[-–]\s?(?P<b>{_YEAR}|\d{{2}})(?![\w.,]?\d)")
_IN_CONTEXT = re.compile(rf"(?P<pre>\b(?P<word>\w+)\s+)(?P<y>{_YEAR})(?![\w.,]?\d)")


def _plural(words: str, suffix: str) -> str:
    if suffix == "s" and words.endswith("y"):
        return words[:-1] + "ies"
    return words + suffix


def _range(match: re.Match[str], lang: Language) -> str | None:
    a, b = int(match["a"]), int(match["b"])
    if b < 100:
        b += a - a % 100
    if b <= a:
        return None
    return f"{numbers.year(a, lang.code)} {lang.words.to} {numbers.year(b, lang.code)}"


def _decade(match: re.Match[str], lang: Language, suffix: str) -> str:
    n = int(match["y"])
    words = numbers.year(n, lang.code) if n >= 1000 else numbers.cardinal(n, lang.code)
    return _plural(words, suffix)


# English "100s of people", "1,000s of fans": a round number in the plural before "of" is
# an amount ("hundreds of people"), not a decade or seconds.
_ROUND_PLURAL = re.compile(r"(?<![\w.,])(?P<n>10{2,}|10{0,2}(?:,000)+)s(?=\s+of\b)")


def _round_plural(match: re.Match[str], lang: Language) -> str | None:
    digits = match["n"].replace(",", "")
    if len(digits) > 13:  # the pattern holds only round numbers; past trillions, digits
        return None
    words = numbers.cardinal(int(digits), lang.code).split()
    if words[0] == "one":
        words = words[1:]
    return " of ".join(_plural(w, "s") for w in words)


def read_years(text: str, lang: Language) -> str:
    """Say the years in `text` (see the module docstring)."""
    if lang.code == "en":
        text = substitute(_ROUND_PLURAL, text, lambda m: _round_plural(m, lang))
    if lang.decade_suffix:
        decades = re.compile(rf"(?<![\w.,])['’]?(?P<y>\d{{3}}0|\d0){lang.decade_suffix}\b")
        text = substitute(decades, text, lambda m: _decade(m, lang, lang.decade_suffix or ""))
    text = substitute(_RANGE, text, lambda m: _range(m, lang))
    if lang.year_words:
        text = substitute(
            _IN_CONTEXT,
            text,
            lambda m: (
                m["pre"] + numbers.year(int(m["y"]), lang.code)
                if m["word"].lower() in lang.year_words
                else None
            ),
        )
    return text
