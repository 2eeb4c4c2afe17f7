"""Phone numbers and long digit runs, read as groups of digits.

"+1 (555) 123-4567" is said "plus one, five five five, one two three, four
five six seven": a number nobody would say as "five hundred fifty-five".
Something counts as phone-like when it starts with "+", has an area code in
brackets, or is three or more digit groups that are not a thousands grouping
and hold at least seven digits; "555-1234" counts too (three then four
digits, unless it looks like a range such as "200-2500"), and so does an
area code starting with 0 before one more group ("030 1234567"). A run of ten or
more digits without separators is read in groups of three. French reads
two-digit groups as numbers ("zéro six, douze, trente-quatre").
"""

from __future__ import annotations

import re

from pocketcli.normalize import numbers
from pocketcli.normalize.languages.base import Language
from pocketcli.normalize.rewrite import substitute

__all__ = ["read_phones", "say_phone"]

_INTERNATIONAL = re.compile(r"(?<![\w+])\+\d{1,3}(?:[ .-]?\(?\d{1,5}\)?)*\d")
_AREA_CODE = re.compile(r"(?<![\w(])\(\d{2,5}\)\s?\d{2,5}(?:[ .-]\d{2,5})+(?![\w.,-]?\d)")
_GROUPS = re.compile(r"(?<![\w.,+-])\d{2,5}(?:[ .-]\d{2,5}){2,}(?![\w.,-]?\d)")
_AREA_ZERO = re.compile(r"(?<![\w.,+-])0\d{1,4}[ /-]\d{3,8}(?![\w.,-]?\d)")
_THREE_FOUR = re.compile(r"(?<![\w.,+-])(\d{3})-(\d{4})(?![\w.,-]?\d)")
_LONG_RUN = re.compile(r"(?<![\d.,])\d{10,}(?![.,]?\d)")
_DIGIT_GROUP = re.compile(r"\d+")


def _group(digits: str, lang: Language) -> str:
    if lang.phone_pairs and len(digits) == 2:
        if digits[0] == "0":
            return numbers.digits(digits, lang.code)
        return numbers.cardinal(int(digits), lang.code)
    return numbers.digits(digits, lang.code)


def say_phone(text: str, lang: Language) -> str:
    """Digit groups of `text` said one after the other, with "plus" for a leading "+"."""
    said = ", ".join(_group(g, lang) for g in _DIGIT_GROUP.findall(text))
    return f"{lang.words.plus} {said}" if text.startswith("+") else said


def _is_thousands(text: str, lang: Language) -> bool:
    """Whether `text` is a number grouped by this language's thousands separators."""
    head, *groups = re.split(f"[{re.escape(lang.group_separators)}]", text)
    return len(head) <= 3 and all(len(g) == 3 for g in groups) and "-" not in text


def _groups(match: re.Match[str], lang: Language) -> str | None:
    text = match[0]
    if _is_thousands(text, lang) or sum(c.isdigit() for c in text) < 7:
        return None
    return say_phone(text, lang)


def _long_enough(match: re.Match[str], lang: Language) -> str | None:
    return say_phone(match[0], lang) if sum(c.isdigit() for c in match[0]) >= 7 else None


def _three_four(match: re.Match[str], lang: Language) -> str | None:
    low, high = int(match[1]), int(match[2])
    if high % 100 == 0 and high > low:  # a range like "200-2500"
        return None
    return say_phone(match[0], lang)


def read_phones(text: str, lang: Language) -> str:
    """Say phone-like numbers and long digit runs digit by digit (see the module docstring)."""
    text = substitute(_INTERNATIONAL, text, lambda m: _long_enough(m, lang))
    text = substitute(_AREA_CODE, text, lambda m: say_phone(m[0], lang))
    text = substitute(_GROUPS, text, lambda m: _groups(m, lang))
    text = substitute(_AREA_ZERO, text, lambda m: _long_enough(m, lang))
    text = substitute(_THREE_FOUR, text, lambda m: _three_four(m, lang))
    return substitute(_LONG_RUN, text, lambda m: numbers.digit_groups(m[0], lang.code))
