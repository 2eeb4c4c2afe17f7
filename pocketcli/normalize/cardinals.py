"""Every number the specific passes left: fractions, versions, ranges, plain numbers.

Runs after dates, money, units and ordinals. Its last step reads any digit
still left one by one, which is what guarantees that normalised text holds
no ASCII digit whatever the input.
"""

from __future__ import annotations

import re

from pocketcli.normalize import amounts, numbers
from pocketcli.normalize.languages.base import Language
from pocketcli.normalize.rewrite import substitute

__all__ = ["read_cardinals"]

_FRACTION = re.compile(r"(?<![\w/.,])(?P<a>\d)/(?P<b>\d)(?![\w/]|[.,]\d)")
_VERSION = re.compile(r"(?<![\d_.,])\d+(?:\.\d+){2,}(?![\w]|[.,]\d)")
_DIGITS = re.compile(r"\d+")
_compiled: dict[str, tuple[re.Pattern[str], re.Pattern[str]]] = {}


def _patterns(lang: Language) -> tuple[re.Pattern[str], re.Pattern[str]]:
    if lang.name not in _compiled:
        amount = amounts.amount_pattern(lang)
        _compiled[lang.name] = (
            re.compile(rf"(?<![^\W\d_]){amount}"),
            re.compile(amounts.number_pattern(lang)),
        )
    return _compiled[lang.name]


def _version(match: re.Match[str], lang: Language) -> str | None:
    parts = match[0].split(".")
    if "." in lang.group_separators and all(len(p) == 3 for p in parts[1:]) and len(parts[0]) <= 3:
        return None  # "1.234.567": a grouped number, not a version
    said = (numbers.decimal_words(p, None, lang.code, lang.words.point) for p in parts)
    return f" {lang.words.dot} ".join(said)


def read_cardinals(text: str, lang: Language) -> str:
    """Say every number left in `text`; afterwards it has no ASCII digit."""
    text = substitute(_FRACTION, text, lambda m: lang.fractions.get(f"{m['a']}/{m['b']}"))
    text = substitute(_VERSION, text, lambda m: _version(m, lang))
    ranges, number = _patterns(lang)
    text = substitute(ranges, text, lambda m: amounts.say_amount(m, lang) if m["b"] else None)
    text = substitute(number, text, lambda m: amounts.say_number(m["n_sign"], m["n"], lang))
    return substitute(_DIGITS, text, lambda m: numbers.digits(m[0], lang.code))
