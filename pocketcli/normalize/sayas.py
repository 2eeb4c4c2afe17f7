"""SSML `<say-as>`: content said the way `interpret-as` asks, already normalised.

Supported: characters and spell-out (letter by letter, digits as words),
cardinal, ordinal, digits, date (with the optional `format` attribute, e.g.
"mdy", "dmy", "ymd", "md", "dm", "ym", "my", "y"; the language's own order
by default) and telephone. Content that does not fit the reading (letters
for "cardinal", an impossible date) is normalised as ordinary text, with a
warning.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from pocketcli.normalize import amounts, numbers
from pocketcli.normalize.languages.base import Language
from pocketcli.normalize.phones import say_phone
from pocketcli.normalize.pipeline import normalize_text

__all__ = ["INTERPRETATIONS", "say_as"]

INTERPRETATIONS = ("characters", "spell-out", "cardinal", "ordinal", "digits", "date", "telephone")
_GROUPS = re.compile(r"\d+")


def _characters(content: str, lang: Language) -> str | None:
    said = []
    for ch in content:
        if "0" <= ch <= "9":
            said.append(numbers.digits(ch, lang.code))
        elif ch.isalpha():
            said.append(ch.upper())
    return " ".join(said) or None


def _cardinal(content: str, lang: Language) -> str | None:
    match = re.fullmatch(amounts.number_pattern(lang), content)
    return amounts.say_number(match["n_sign"], match["n"], lang) if match else None


def _ordinal(content: str, lang: Language) -> str | None:
    match = re.fullmatch(rf"(\d{{1,9}})((?:{lang.ordinal_marks}|st|nd|rd|th)?)", content)
    return lang.grammar.ordinal(int(match[1]), match[2], "") if match else None


def _digits(content: str, lang: Language) -> str | None:
    return numbers.digits(content, lang.code) or None


def _date(content: str, lang: Language, date_format: str | None) -> str | None:
    parts = [int(g) for g in _GROUPS.findall(content)]
    if date_format is None:
        if len(parts) == 3 and parts[0] > 999:
            date_format = "ymd"
        else:
            date_format = ("dmy" if lang.day_first else "mdy")[: len(parts)] if parts else ""
            date_format = {"d": "y", "m": "y"}.get(date_format, date_format)
    date_format = date_format.lower()
    if len(date_format) != len(parts) or sorted(date_format) != sorted(set(date_format)):
        return None
    if not set(date_format) <= {"d", "m", "y"}:
        return None
    value = dict(zip(date_format, parts, strict=True))
    day, month, year = value.get("d"), value.get("m"), value.get("y")
    if month is None:
        return numbers.year(year, lang.code) if year is not None and day is None else None
    if not 1 <= month <= 12 or (day is not None and not 1 <= day <= 31):
        return None
    return lang.grammar.date(day, month, year, "")


def say_as(
    content: str,
    interpret_as: str,
    lang: Language,
    date_format: str | None,
    warn: Callable[[str], None],
) -> str:
    """Words for `content` read as `interpret_as`; falls back to normal text with a warning."""
    content = content.strip()
    kind = interpret_as.lower()
    readers: dict[str, Callable[[], str | None]] = {
        "characters": lambda: _characters(content, lang),
        "spell-out": lambda: _characters(content, lang),
        "cardinal": lambda: _cardinal(content, lang),
        "ordinal": lambda: _ordinal(content, lang),
        "digits": lambda: _digits(content, lang),
        "date": lambda: _date(content, lang, date_format),
        "telephone": lambda: say_phone(content, lang) or None,
    }
    said = readers[kind]() if kind in readers else None
    if said is None:
        if kind in readers:
            warn(
                f'<say-as interpret-as="{interpret_as}"> cannot read {content!r}; '
                "reading it as ordinary text"
            )
        else:
            warn(f'unsupported <say-as interpret-as="{interpret_as}">; reading it as ordinary text')
        said = normalize_text(content, lang.name)
    return said
