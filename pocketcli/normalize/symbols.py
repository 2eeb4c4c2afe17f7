"""Symbols said in words (&, @, +, =, #, /, %, currency signs) and the rest removed.

Runs after every number is read, so what is left is a symbol standing among
words: "Tom & Jerry", "#pockettts", "and/or", "€". A "#" right before a
number is "number" ("#1"), which `number_signs` says before numbers become
words. Signs with no spoken form (* _ \\ | ~ ^ < > `) become spaces;
square and curly brackets become round ones, which the model knows.

People's names for things are kept: "C++" and "Notepad++" end in "plus plus",
a letter with "#" after it is that letter "sharp" ("C#", "F#": the names of
the languages and of the musical notes). Symbols side by side are said one
word each, a doubled symbol once ("x == y" is "x equals y"), and three or
more symbols in a row ("###", "@@@", "+++", "=-=-") are decoration and are
dropped, never spelled as one glued word.
"""

from __future__ import annotations

import re

from pocketcli.normalize.currency import SYMBOLS
from pocketcli.normalize.languages.base import Language
from pocketcli.normalize.rewrite import substitute

__all__ = ["number_signs", "read_names", "read_symbols"]

_NUMBER_SIGN = re.compile(r"#\s?(?=\d)")
_SPOKEN = r"R\$|US\$|[&@+=#/%°ºª²³½¼¾⅓⅔$€£¥]"
_SPOKEN_ONE = re.compile(_SPOKEN)
_SPOKEN_RUN = re.compile(rf"(?:{_SPOKEN})+")
_SILENT = re.compile(r"[*_\\|~^<>`\[\]{}]")
# "C++", "Notepad++"; "C#", "F#" (a lone letter, so "#tag" and "x#y" are not names).
# A digit may follow: "C++11", "C#7".
_PLUS_PLUS = re.compile(r"(?<=[^\W\d_])\+\+(?![^\W\d]|\+)")
_SHARP = re.compile(r"(?<![\w#])([^\W\d_])#(?![^\W\d]|#)")
# The name of the "#" in "C#", the same in every language.
_SHARP_WORD = "sharp"
# From this many symbols in a row, the run is decoration, not words.
_DECORATION = 3
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


def read_names(text: str, lang: Language) -> str:
    """ "C++" -> "C plus plus", "C#" -> "C sharp"; before "+" and "#" are read as signs."""
    plus = lang.words.plus
    text = substitute(_PLUS_PLUS, text, lambda m: f"{plus} {plus}")
    return substitute(_SHARP, text, lambda m: f"{m[1]} {_SHARP_WORD}")


def _run(run: str, lang: Language) -> str:
    """A run of symbols side by side: one word each, a repeat said once, decoration dropped."""
    symbols = _SPOKEN_ONE.findall(run)
    if len(symbols) >= _DECORATION:
        return ""
    said = [_word(s, lang) for i, s in enumerate(symbols) if i == 0 or s != symbols[i - 1]]
    return " ".join(word for word in said if word)


def read_symbols(text: str, lang: Language) -> str:
    """Say or remove the symbols left in `text` (see the module docstring)."""
    text = substitute(_SPOKEN_RUN, text, lambda m: _run(m[0], lang))
    return substitute(_SILENT, text, lambda m: _word(m[0], lang))
