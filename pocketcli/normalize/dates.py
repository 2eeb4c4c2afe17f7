"""Dates and clock times in their common written forms, said as the language says them.

Dates: ISO "2024-03-15", numeric "15/03/2024" (day first in every language
but English, which reads "03/15/2024" month first; a reading that gives no
valid date falls back to the other order), and dates with a month name
("March 15, 2024", "15th of March", "15. März 2024", "1er mars",
"15 de marzo de 2024"); a month name followed by a year reads the year as
a year. Times: "14:30", "14:30:15", "2:30 pm" and "2 pm" (English), "14h30"
(French), with German "Uhr" and Dutch "uur" said once.
"""

from __future__ import annotations

import calendar
import re

from pocketcli.normalize import numbers
from pocketcli.normalize.languages.base import Language
from pocketcli.normalize.rewrite import ends_sentence_at, previous_word, substitute

__all__ = ["month_pattern", "month_number", "read_dates", "read_times"]

_ISO = re.compile(
    r"(?<![\w.,/-])(?P<y>\d{4})(?P<sep>[-/.])(?P<m>\d{1,2})(?P=sep)(?P<d>\d{1,2})"
    r"(?!\d|[-/.]\d)"
)
_NUMERIC = re.compile(
    r"(?<![\w.,/-])(?P<a>\d{1,2})(?P<sep>[-/.])(?P<b>\d{1,2})(?P=sep)"
    r"(?P<y>\d{4}|\d{2})(?!\d|[-/.]\d)"
)
_compiled: dict[str, dict[str, re.Pattern[str]]] = {}


def month_pattern(lang: Language) -> str:
    """Regex source matching the language's month names (and English abbreviations)."""
    aliases = (a.capitalize() if lang.months_case_sensitive else a for a in lang.month_aliases)
    names = sorted([*lang.months, *aliases], key=len, reverse=True)
    alternatives = "|".join(map(re.escape, names))
    return f"(?:{alternatives})" if lang.months_case_sensitive else f"(?i:{alternatives})"


def month_number(name: str, lang: Language) -> int:
    """1-12 for a month name or alias as matched by `month_pattern`."""
    key = name.lower().rstrip(".")
    for i, month in enumerate(lang.months, 1):
        if month.lower() == key:
            return i
    return lang.month_aliases[key]


def _patterns(lang: Language) -> dict[str, re.Pattern[str]]:
    if lang.name in _compiled:
        return _compiled[lang.name]
    month = month_pattern(lang)
    of = rf"(?:(?:{lang.date_of})\s+)?" if lang.date_of else ""
    year = r"(?P<y>\d{4})(?!\d)"
    patterns = {
        "day_month": re.compile(
            rf"(?<![\w.,])(?P<d>\d{{1,2}})(?:{lang.ordinal_marks})?\s*{of}(?P<month>{month})\b"
            rf"(?:,?\s*{of}{year})?"
        ),
        "month_year": re.compile(rf"(?P<pre>(?<!\w)(?:{month})\.?,?\s+{of}){year}"),
    }
    if not lang.day_first:
        patterns["month_day"] = re.compile(
            rf"(?<!\w)(?P<month>{month})\.?\s+(?P<d>\d{{1,2}})(?:{lang.ordinal_marks})?"
            rf"(?![\d:\w])(?:,?\s+{year})?"
        )
    clock = r"(?<![\w:.,])(?P<h>[01]?\d|2[0-3]):(?P<m>[0-5]\d)(?::(?P<s>[0-5]\d))?(?!\d|:\d)"
    meridiem = r"(?:\s?(?P<mer>[AaPp])\.?[Mm](?P<dot>\.)?(?!\w))"
    suffix = rf"(?:\s?{lang.time_suffix}\b)?" if lang.time_suffix else ""
    patterns["clock"] = re.compile(clock + (meridiem + "?" if lang.meridiem else "") + suffix)
    if lang.meridiem:
        patterns["hour_meridiem"] = re.compile(r"(?<![\w:.,])(?P<h>1[0-2]|0?[1-9])" + meridiem)
    if lang.hour_mark:
        patterns["hour_mark"] = re.compile(
            rf"(?<![\w:.,])(?P<h>[01]?\d|2[0-3])\s?{lang.hour_mark}\s?(?P<m>[0-5]\d)(?!\d)"
        )
    _compiled[lang.name] = patterns
    return patterns


def _valid(day: int, month: int, year: int | None) -> bool:
    if not 1 <= month <= 12 or day < 1:
        return False
    return day <= calendar.monthrange(year if year else 2000, month)[1]


def _date(
    match: re.Match[str], text: str, lang: Language, day: int, month: int, year: int | None
) -> str | None:
    if not _valid(day, month, year):
        return None
    return lang.grammar.date(day, month, year, previous_word(text, match.start()))


def _numeric(match: re.Match[str], text: str, lang: Language) -> str | None:
    a, b, year = int(match["a"]), int(match["b"]), int(match["y"])
    orders = [(a, b), (b, a)] if lang.day_first else [(b, a), (a, b)]
    for day, month in orders:
        if _valid(day, month, year):
            return _date(match, text, lang, day, month, year)
    return None


def read_dates(text: str, lang: Language) -> str:
    """Say the dates in `text` (see the module docstring)."""
    p = _patterns(lang)
    current = text
    text = substitute(
        _ISO, current, lambda m: _date(m, current, lang, int(m["d"]), int(m["m"]), int(m["y"]))
    )
    current = text
    text = substitute(_NUMERIC, current, lambda m: _numeric(m, current, lang))
    for name in ("month_day", "day_month"):
        if name in p:
            current = text
            text = substitute(
                p[name],
                current,
                lambda m, t=current: _date(
                    m,
                    t,
                    lang,
                    int(m["d"]),
                    month_number(m["month"], lang),
                    int(m["y"]) if m["y"] else None,
                ),
            )
    return substitute(
        p["month_year"], text, lambda m: f"{m['pre']}{numbers.year(int(m['y']), lang.code)}"
    )


def _meridiem(match: re.Match[str], text: str, said: str) -> str:
    said += " A M" if match["mer"] in "Aa" else " P M"
    if match["dot"] and ends_sentence_at(text, match.end()):
        said += "."
    return said


def _clock(match: re.Match[str], text: str, lang: Language) -> str:
    hour, minute = int(match["h"]), int(match["m"])
    if match.groupdict().get("mer"):
        said = numbers.cardinal(hour, lang.code) if minute == 0 else lang.grammar.time(hour, minute)
        said = _meridiem(match, text, said)
    else:
        said = lang.grammar.time(hour, minute)
    if match["s"]:
        seconds = int(match["s"])
        noun = lang.words.seconds.singular if seconds == 1 else lang.words.seconds.plural
        count = lang.grammar.agree(
            numbers.cardinal(seconds, lang.code), seconds, lang.words.seconds.gender
        )
        said += f" {lang.words.and_} {lang.grammar.phrase(count, noun)}"
    return said


def read_times(text: str, lang: Language) -> str:
    """Say the clock times in `text` (see the module docstring)."""
    p = _patterns(lang)
    current = text
    text = substitute(p["clock"], current, lambda m: _clock(m, current, lang))
    if "hour_meridiem" in p:
        current = text
        text = substitute(
            p["hour_meridiem"],
            current,
            lambda m: _meridiem(m, current, numbers.cardinal(int(m["h"]), lang.code)),
        )
    if "hour_mark" in p:
        text = substitute(
            p["hour_mark"], text, lambda m: lang.grammar.time(int(m["h"]), int(m["m"]))
        )
    return text
