"""Symbols said in words (&, @, +, =, #, /, %, currency signs) and the rest removed.

Runs after every number is read, so what is left is a symbol standing among
words: "Tom & Jerry", "#pockettts", "and/or", "€". A "#" right before a
number is "number" ("#1"), which `number_signs` says before numbers become
words. Signs with no spoken form (* _ \\ | ~ ^ < > `) become spaces;
square and curly brackets become round ones, which the model knows.
"""

from __future__ import annotations

import re

from pocketcli.normalize.currency import SYMBOLS
from pocketcli.normalize.languages.base import Language
from pocketcli.normalize.rewrite import substitute

__all__ = ["number_signs", "read_symbols"]

_NUMBER_SIGN = re.compile(r"#\s?(?=\d)")
_SYMBOL = re.compile(r"R\$|US\$|[&@+=#/%°ºª²³½¼¾⅓⅔$€£¥*_\\|~^<>`\[\]{}]")
_FRACTIONS = {"½": "1/2", "¼": "1/4", "¾": "3/4", "⅓": "1/3", "⅔": "2/3"}
_BRACKETS = {"[": "(", "{": "(", "]": ")", "}": ")"}


def number_signs(text: str, lang: Language) -> str:
    """ "#1" -> "number 1"."""
    return substitute(_NUMBER_SIGN, text, lambda m: f"{lang.words.number} ")


def _word(symbol: str, lang: Language) -> str:
    w = lang.words
    if symbol in _BRACKETS:
        return _BRACKETS[symbol]
    if symbol in _FRACTIONS:
        return lang.fractions[_FRACTIONS[symbol]]
    if symbol in SYMBOLS:
        currency = lang.currencies.get(SYMBOLS[symbol])
        return currency.main.plural if currency else ""
    return {
        "&": w.ampersand,
        "@": w.at,
        "+": w.plus,
        "=": w.equals,
        "#": w.hashtag,
        "/": w.slash,
        "%": w.percent,
        "°": w.degree.plural,
    }.get(symbol, "")


def read_symbols(text: str, lang: Language) -> str:
    """Say or remove the symbols left in `text` (see the module docstring)."""
    return substitute(_SYMBOL, text, lambda m: _word(m[0], lang))
