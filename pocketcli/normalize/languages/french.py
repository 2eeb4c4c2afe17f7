"""French: "1 234,5", day-first dates with "premier", "quatorze heures trente".

Amounts agree with feminine nouns ("vingt et une heures", "une livre"), and
nouns are singular below two ("1,5 kilomètre"), as French grammar has it.
"""

from __future__ import annotations

import re

from pocketcli.normalize import numbers
from pocketcli.normalize.languages.base import (
    Abbreviation,
    Currency,
    Grammar,
    Language,
    Noun,
    Scale,
    Words,
    singular_below_two,
)

MONTHS = (
    "janvier",
    "février",
    "mars",
    "avril",
    "mai",
    "juin",
    "juillet",
    "août",
    "septembre",
    "octobre",
    "novembre",
    "décembre",
)

_FINAL_UN = re.compile(r"(^|[\s-])un$")


def _agree(words: str, n: int, gender: str) -> str:
    return _FINAL_UN.sub(r"\1une", words) if gender == "f" else words


def _ordinal(n: int, mark: str, previous: str) -> str:
    if n == 1:
        return "première" if mark in ("re", "ère", "ere") else "premier"
    if n == 2 and mark in ("nd", "nde"):
        return "second" if mark == "nd" else "seconde"
    return numbers.ordinal(n, "fr")


def _date(day: int | None, month: int, year: int | None, previous: str) -> str:
    said = MONTHS[month - 1]
    if day is not None:
        said = f"{'premier' if day == 1 else numbers.cardinal(day, 'fr')} {said}"
    if year is not None:
        said += f" {numbers.year(year, 'fr')}"
    return said


def _time(hour: int, minute: int) -> str:
    said = f"{_agree(numbers.cardinal(hour, 'fr'), hour, 'f')} heure{'s' if hour > 1 else ''}"
    if minute:
        said += f" {_agree(numbers.cardinal(minute, 'fr'), minute, 'f')}"
    return said


def _noun(singular: str, gender: str = "m", plural: str | None = None) -> Noun:
    return Noun(singular, plural if plural is not None else singular + "s", gender)


LANGUAGE = Language(
    name="french",
    code="fr",
    decimal_separator=",",
    group_separators=" .",
    day_first=True,
    letters="àâæçéèêëîïôœùûüÿÀÂÆÇÉÈÊËÎÏÔŒÙÛÜŸ",
    words=Words(
        point="virgule",
        minus="moins",
        percent="pour cent",
        to="à",
        and_="et",
        plus="plus",
        equals="égale",
        at="arobase",
        dot="point",
        slash="slash",
        dash="tiret",
        underscore="tiret bas",
        number="numéro",
        hashtag="hashtag",
        ampersand="et",
        degree=_noun("degré"),
        seconds=_noun("seconde", "f"),
    ),
    months=MONTHS,
    grammar=Grammar(
        agree=_agree, ordinal=_ordinal, date=_date, time=_time, singular=singular_below_two
    ),
    currencies={
        "USD": Currency(_noun("dollar"), _noun("cent")),
        "EUR": Currency(_noun("euro"), _noun("centime")),
        "GBP": Currency(Noun("livre sterling", "livres sterling", "f"), Noun("penny", "pence")),
        "JPY": Currency(_noun("yen"), None),
        "CHF": Currency(Noun("franc suisse", "francs suisses"), _noun("centime")),
    },
    units={
        "km": _noun("kilomètre"),
        "m": _noun("mètre"),
        "cm": _noun("centimètre"),
        "mm": _noun("millimètre"),
        "kg": _noun("kilogramme"),
        "g": _noun("gramme"),
        "mg": _noun("milligramme"),
        "l": _noun("litre"),
        "ml": _noun("millilitre"),
        "km/h": Noun("kilomètre par heure", "kilomètres par heure"),
        "mph": Noun("mile par heure", "miles par heure"),
        "°C": Noun("degré Celsius", "degrés Celsius"),
        "°F": Noun("degré Fahrenheit", "degrés Fahrenheit"),
        "h": _noun("heure", "f"),
        "min": _noun("minute", "f"),
        "s": _noun("seconde", "f"),
        "ms": _noun("milliseconde", "f"),
        "km²": Noun("kilomètre carré", "kilomètres carrés"),
        "m²": Noun("mètre carré", "mètres carrés"),
    },
    scales={
        "mille": Scale("mille"),
        "million": Scale("million", "de", "d'"),
        "millions": Scale("millions", "de", "d'"),
        "milliard": Scale("milliard", "de", "d'"),
        "milliards": Scale("milliards", "de", "d'"),
    },
    abbreviations=(
        Abbreviation("M.", "Monsieur", before=r"\s+[A-ZÀ-Ý]"),
        Abbreviation("MM.", "Messieurs", before=r"\s+[A-ZÀ-Ý]"),
        Abbreviation("Mme", "Madame"),
        Abbreviation("Mmes", "Mesdames"),
        Abbreviation("Mlle", "Mademoiselle"),
        Abbreviation("Dr", "Docteur", before=r"\s+[A-ZÀ-Ý]"),
        Abbreviation("Dr.", "Docteur"),
        Abbreviation("Pr", "Professeur", before=r"\s+[A-ZÀ-Ý]"),
        Abbreviation("Me", "Maître", before=r"\s+[A-ZÀ-Ý]"),
        Abbreviation("St", "Saint", before=r"[\s-]+[A-ZÀ-Ý]"),
        Abbreviation("Ste", "Sainte", before=r"[\s-]+[A-ZÀ-Ý]"),
        Abbreviation("etc.", "et cetera", ends_sentence=True),
        Abbreviation("c.-à-d.", "c'est-à-dire"),
        Abbreviation("p. ex.", "par exemple"),
        Abbreviation("env.", "environ"),
        Abbreviation("av. J.-C.", "avant Jésus-Christ", ends_sentence=True),
        Abbreviation("apr. J.-C.", "après Jésus-Christ", ends_sentence=True),
        Abbreviation("n°", "numéro", before=r"\s?\d"),
        Abbreviation("N°", "numéro", before=r"\s?\d"),
        Abbreviation("cf.", "confer"),
        Abbreviation("tél.", "téléphone"),
    ),
    emoji={
        "heart": "cœur",
        "thumbs_up": "pouce levé",
        "smile": "sourire",
        "laugh": "rire",
        "sad": "visage triste",
    },
    fractions={
        "1/2": "un demi",
        "1/3": "un tiers",
        "2/3": "deux tiers",
        "1/4": "un quart",
        "3/4": "trois quarts",
    },
    year_words=frozenset(),
    ordinal_marks=r"er|re|ère|ere|nde|nd|ème|eme|e",
    hour_mark="h",
    phone_pairs=True,
)
