"""Numbers into words: num2words for the words, our own code for the written forms.

num2words knows how each language counts; it does not know how people write
numbers (separators, signs, leading zeros) nor how they read long digit runs,
so parsing and the choice of reading live here. Every function returns text
without ASCII digits, whatever its input, because the model cannot read digits.
"""

from __future__ import annotations

import re
from functools import lru_cache

from num2words import num2words

__all__ = [
    "MAX_CARDINAL",
    "cardinal",
    "decimal_words",
    "digit_groups",
    "digits",
    "ordinal",
    "parse_amount",
    "year",
]

# Above this we read digits: nobody says "one quadrillion ..." and num2words'
# coverage of huge scales differs between languages.
MAX_CARDINAL = 10**15

# Languages whose decimals are read digit by digit ("drei Komma eins vier");
# the others read up to two decimals as a number ("trois virgule quatorze").
_DECIMALS_AS_DIGITS = frozenset({"en", "de"})

_EN_AND = re.compile(r"\band\b")
_NL_EEN_IN_COMPOUND = re.compile(r"(?<=\w)één|één(?=\w)")


def _tidy(words: str, code: str) -> str:
    """Undo num2words habits that do not suit speech.

    Commas inside a number ("one thousand, two hundred") would be read as
    pauses and split chunks; English "and" is dropped for the American
    reading; Dutch writes "één" with accents only when it stands alone.
    """
    words = words.replace(",", "")
    if code == "en":
        words = _EN_AND.sub("", words)
    elif code == "nl":
        words = _NL_EEN_IN_COMPOUND.sub("een", words)
    return " ".join(words.split())


@lru_cache(maxsize=4096)
def _n2w(n: int, code: str, to: str) -> str:
    try:
        return _tidy(num2words(n, lang=code, to=to), code)
    except (OverflowError, NotImplementedError, ValueError, TypeError, IndexError, KeyError):
        return digits(str(n), code)


def cardinal(n: int, code: str) -> str:
    """`n` in words; callers say any sign themselves, so only `abs(n)` is read.

    Beyond `MAX_CARDINAL` the digits are read in groups instead.
    """
    n = abs(n)
    if n >= MAX_CARDINAL:
        return digit_groups(str(n), code)
    return _n2w(n, code, "cardinal")


def ordinal(n: int, code: str) -> str:
    """The ordinal of `n` (masculine, nominative, as num2words gives it)."""
    if n < 0 or n >= MAX_CARDINAL:
        return cardinal(n, code)
    return _n2w(n, code, "ordinal")


def year(n: int, code: str) -> str:
    """`n` read as a year: "nineteen ninety" in English, the cardinal where that is the norm."""
    if not 0 < n < 10_000:
        return cardinal(n, code)
    return _n2w(n, code, "year")


@lru_cache(maxsize=16)
def _digit_names(code: str) -> tuple[str, ...]:
    return tuple(_tidy(num2words(d, lang=code), code) for d in range(10))


def digits(text: str, code: str) -> str:
    """Each ASCII digit of `text` as a word, space separated; other characters are skipped."""
    names = _digit_names(code)
    return " ".join(names[ord(c) - 48] for c in text if "0" <= c <= "9")


def digit_groups(text: str, code: str, size: int = 3) -> str:
    """A long digit run read in groups of `size` digits, groups separated by commas.

    A last group of a single digit joins the one before it, as people do
    with phone numbers ("123 456 7890").
    """
    run = "".join(c for c in text if "0" <= c <= "9")
    groups = [run[i : i + size] for i in range(0, len(run), size)]
    if len(groups) > 1 and len(groups[-1]) == 1:
        groups[-2:] = [groups[-2] + groups[-1]]
    return ", ".join(digits(g, code) for g in groups)


def _fraction_words(frac: str, code: str) -> str:
    if code in _DECIMALS_AS_DIGITS or len(frac) > 2:
        return digits(frac, code)
    zeros = len(frac) - len(frac.lstrip("0"))
    rest = frac[zeros:]
    parts = [digits("0" * zeros, code)] if zeros else []
    if rest:
        parts.append(cardinal(int(rest), code))
    return " ".join(parts)


def decimal_words(integer: str, frac: str | None, code: str, point: str) -> str:
    """A non-negative number given as digit strings, e.g. ("3", "14") -> "three point one four".

    An integer part with a leading zero ("007") or too large to say is read digit by digit.
    """
    if len(integer) > 1 and integer.startswith("0"):
        whole = digits(integer, code)
    elif len(integer) > 15:
        whole = digit_groups(integer, code)
    else:
        whole = cardinal(int(integer), code)
    if not frac:
        return whole
    return f"{whole} {point} {_fraction_words(frac, code)}"


def parse_amount(
    text: str, decimal_separator: str, group_separators: str
) -> tuple[str, str | None]:
    """Split a written number into (integer digits, fraction digits or None).

    `text` is what the number pattern of `pocketcli.normalize.amounts` matched,
    so every group separator in it sits between groups of three digits.
    """
    integer, sep, frac = text.partition(decimal_separator)
    if not sep and decimal_separator == "," and "." in text and not _is_grouped(text, "."):
        integer, _, frac = text.partition(".")  # "3.5" in a comma language: still a decimal
    for g in group_separators:
        integer = integer.replace(g, "")
    return integer, (frac or None)


def _is_grouped(text: str, sep: str) -> bool:
    head, *groups = text.split(sep)
    return bool(groups) and 1 <= len(head) <= 3 and all(len(g) == 3 for g in groups)
