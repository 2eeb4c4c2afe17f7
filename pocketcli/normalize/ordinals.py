"""Ordinals written with digits: "1st", "2e", "3.", "4º", "1ª", "8ste".

The written mark can carry gender (Spanish "1.ª", French "1re") which the
language's grammar turns into the right word. A German number followed by
a period is also how a sentence ends with a number ("Ich habe 3."), so it is
read as an ordinal only when the next word is lower-case or a month, or
the word before is one that calls for an ordinal ("am 3. Mai",
"der 3. Platz").
"""

from __future__ import annotations

import re

from pocketcli.normalize.dates import month_pattern
from pocketcli.normalize.languages.base import Language
from pocketcli.normalize.rewrite import previous_word, substitute

__all__ = ["read_ordinals"]

_compiled: dict[str, re.Pattern[str]] = {}


def _pattern(lang: Language) -> re.Pattern[str]:
    if lang.name not in _compiled:
        _compiled[lang.name] = re.compile(
            rf"(?<![\w.,])(?P<n>\d{{1,9}})(?P<mark>{lang.ordinal_marks})(?![\w°ºª])"
            rf"(?:(?=\s+(?P<word>{month_pattern(lang)}\b|\w+)))?"
        )
    return _compiled[lang.name]


def _say(match: re.Match[str], text: str, lang: Language) -> str | None:
    mark = match["mark"]
    previous = previous_word(text, match.start())
    if mark == ".":
        word = match["word"]
        if word is None:
            return None
        in_context = (
            word[0].islower()
            or re.fullmatch(month_pattern(lang), word)
            or previous.lower() in lang.period_ordinal_after
        )
        if not in_context or word.isdigit():
            return None
    return lang.grammar.ordinal(int(match["n"]), mark, previous)


def read_ordinals(text: str, lang: Language) -> str:
    """Say the ordinals in `text` (see the module docstring)."""
    current = text
    return substitute(_pattern(lang), current, lambda m: _say(m, current, lang))
