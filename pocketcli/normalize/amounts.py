"""How a number is written in running text, per language, and how it is said.

One pattern per language recognises a written number with its optional sign
and its thousands and decimal separators ("-1.234,5" in German, "1 234,5" in
French, "1,234.5" in English); an *amount* is a number or a range of two
("5-10"). Currency, units, percentages and the plain-number pass all build
on these, so separators are handled in one place.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from pocketcli.normalize import numbers
from pocketcli.normalize.languages.base import Language

__all__ = ["amount_pattern", "last_value", "number_pattern", "say_amount", "say_number", "value"]

_patterns: dict[tuple[str, str, bool], str] = {}


def number_pattern(lang: Language, name: str = "n", *, signed: bool = True) -> str:
    """Regex source for one number; groups `{name}_sign` and `{name}`.

    A sign counts only at the start of a word ("-5", not the hyphen of "COVID-19").
    A dotted number that is not a thousands grouping ("3.5" in German text)
    is still read as a decimal.
    """
    key = (lang.name, name, signed)
    if key not in _patterns:
        groups = re.escape(lang.group_separators)
        dec = re.escape(lang.decimal_separator)
        grouped = rf"\d{{1,3}}(?:[{groups}]\d{{3}})+(?:{dec}\d+)?(?![.,]?\d)"
        # In a comma language "3.5" is still a decimal when it is not a grouping.
        plain = r"\d+(?:,\d+|\.\d+)?" if dec == "," else rf"\d+(?:{dec}\d+)?"
        sign = rf"(?:(?<![\w.,\-])(?P<{name}_sign>-))?" if signed else ""
        _patterns[key] = rf"{sign}(?<![\d.,])(?P<{name}>{grouped}|{plain})(?!\d)"
    return _patterns[key]


def amount_pattern(lang: Language) -> str:
    """A number, or a range "5-10" / "5 – 10"; groups a_sign, a, b."""
    second = number_pattern(lang, "b", signed=False)
    return rf"{number_pattern(lang, 'a')}(?:(?:-|\s?–\s?){second})?"


def _split(text: str, lang: Language) -> tuple[str, str | None]:
    return numbers.parse_amount(text, lang.decimal_separator, lang.group_separators)


def value(text: str, lang: Language) -> Decimal:
    """The numeric value of a written number (without its sign)."""
    integer, frac = _split(text, lang)
    try:
        return Decimal(f"{integer}.{frac}" if frac else integer)
    except InvalidOperation:  # pragma: no cover - the pattern only lets digits through
        return Decimal(0)


def say_number(sign: str | None, text: str, lang: Language, gender: str | None = None) -> str:
    """Words for a written number; `gender` makes a whole number agree with a following noun."""
    integer, frac = _split(text, lang)
    words = numbers.decimal_words(integer, frac, lang.code, lang.words.point)
    if gender is not None and frac is None and not integer.startswith("0"):
        words = lang.grammar.agree(words, int(integer), gender)
    return f"{lang.words.minus} {words}" if sign else words


def say_amount(match: re.Match[str], lang: Language, gender: str | None = None) -> str:
    """Words for what `amount_pattern` matched: "five to ten", "minus three"."""
    first = say_number(match["a_sign"], match["a"], lang, gender)
    if match["b"] is None:
        return first
    return f"{first} {lang.words.to} {say_number(None, match['b'], lang, gender)}"


def last_value(match: re.Match[str], lang: Language) -> Decimal:
    """The value that decides singular or plural for a following noun (the range's end)."""
    return value(match["b"] or match["a"], lang)
