"""Measurements after a number: "5 km", "20°C", "1,5 h", "5-10 kg", "50%".

A unit symbol counts only right after an amount (with or without a space)
and before a non-letter, so "m" in "5 m" is metres but the "m" of a word is
never touched. The noun is singular or plural by the language's rule on
the amount (the end of a range), and the number agrees with its gender
("eine Stunde", "une heure"). A degree sign alone is "degrees", except in
Italian and Portuguese where "2°" is an ordinal.
"""

from __future__ import annotations

import re

from pocketcli.normalize import amounts
from pocketcli.normalize.languages.base import Language, Noun
from pocketcli.normalize.rewrite import substitute

__all__ = ["read_units"]

_compiled: dict[str, list[tuple[re.Pattern[str], str]]] = {}


def _symbol_pattern(symbol: str) -> str:
    return re.escape(symbol).replace("°", r"[°º]\s?")


def _patterns(lang: Language) -> list[tuple[re.Pattern[str], str]]:
    """(pattern, kind) pairs; kind is "unit", "degree" or "percent"."""
    if lang.name not in _compiled:
        amount = amounts.amount_pattern(lang)
        symbols = sorted(lang.units, key=len, reverse=True)
        unit = "|".join(_symbol_pattern(s) for s in symbols)
        patterns = [
            (re.compile(rf"{amount}\s?(?P<unit>{unit})(?![\w²³/])"), "unit"),
            (re.compile(rf"{amount}\s?%"), "percent"),
        ]
        if not lang.degree_sign_is_ordinal:
            patterns.append((re.compile(rf"{amount}\s?°(?![\w])"), "degree"))
        _compiled[lang.name] = patterns
    return _compiled[lang.name]


def _unit_for(written: str, lang: Language) -> Noun:
    key = re.sub(r"[°º]\s?", "°", written)
    return lang.units[key]


def _say(match: re.Match[str], kind: str, lang: Language) -> str:
    if kind == "percent":
        return f"{amounts.say_amount(match, lang)} {lang.words.percent}"
    noun = lang.words.degree if kind == "degree" else _unit_for(match["unit"], lang)
    number = amounts.say_amount(match, lang, noun.gender)
    singular = lang.grammar.singular(amounts.last_value(match, lang))
    return lang.grammar.phrase(number, noun.singular if singular else noun.plural)


def read_units(text: str, lang: Language) -> str:
    """Say the measurements and percentages in `text` (see the module docstring)."""
    for pattern, kind in _patterns(lang):
        text = substitute(pattern, text, lambda m, k=kind: _say(m, k, lang))
    return text
