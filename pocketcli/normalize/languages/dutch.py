"""Dutch: "1.234,5", "15-03-2024", "veertien uur dertig", "1e"/"2de"/"8ste".

Unit names stay singular after numbers ("vijf kilometer"), except the few
Dutch pluralises ("vijf minuten").
"""

from __future__ import annotations

from pocketcli.normalize import numbers
from pocketcli.normalize.languages.base import (
    Abbreviation,
    Currency,
    Grammar,
    Language,
    Noun,
    Scale,
    Words,
)

MONTHS = (
    "januari",
    "februari",
    "maart",
    "april",
    "mei",
    "juni",
    "juli",
    "augustus",
    "september",
    "oktober",
    "november",
    "december",
)


def _ordinal(n: int, mark: str, previous: str) -> str:
    return numbers.ordinal(n, "nl")


def _date(day: int | None, month: int, year: int | None, previous: str) -> str:
    said = MONTHS[month - 1]
    if day is not None:
        said = f"{numbers.cardinal(day, 'nl')} {said}"
    if year is not None:
        said += f" {numbers.year(year, 'nl')}"
    return said


def _time(hour: int, minute: int) -> str:
    said = f"{numbers.cardinal(hour, 'nl')} uur"
    return f"{said} {numbers.cardinal(minute, 'nl')}" if minute else said


def _same(word: str) -> Noun:
    return Noun(word, word)


LANGUAGE = Language(
    name="dutch",
    code="nl",
    decimal_separator=",",
    group_separators=". ",
    day_first=True,
    letters="áéíóúàèëïöüÁÉÍÓÚÀÈËÏÖÜ",
    words=Words(
        point="komma",
        minus="min",
        percent="procent",
        to="tot",
        and_="en",
        plus="plus",
        equals="is gelijk aan",
        at="apenstaartje",
        dot="punt",
        slash="slash",
        dash="streepje",
        underscore="laag streepje",
        number="nummer",
        hashtag="hashtag",
        ampersand="en",
        degree=Noun("graad", "graden"),
        seconds=Noun("seconde", "seconden"),
    ),
    months=MONTHS,
    grammar=Grammar(ordinal=_ordinal, date=_date, time=_time),
    currencies={
        "USD": Currency(_same("dollar"), _same("cent")),
        "EUR": Currency(_same("euro"), _same("cent")),
        "GBP": Currency(_same("pond"), Noun("penny", "pence")),
        "JPY": Currency(_same("yen"), None),
        "CHF": Currency(_same("Zwitserse frank"), _same("rappen")),
    },
    units={
        "km": _same("kilometer"),
        "m": _same("meter"),
        "cm": _same("centimeter"),
        "mm": _same("millimeter"),
        "kg": _same("kilogram"),
        "g": _same("gram"),
        "mg": _same("milligram"),
        "l": _same("liter"),
        "ml": _same("milliliter"),
        "km/h": _same("kilometer per uur"),
        "mph": _same("mijl per uur"),
        "°C": Noun("graad Celsius", "graden Celsius"),
        "°F": Noun("graad Fahrenheit", "graden Fahrenheit"),
        "h": _same("uur"),
        "min": Noun("minuut", "minuten"),
        "s": Noun("seconde", "seconden"),
        "ms": Noun("milliseconde", "milliseconden"),
        "km²": _same("vierkante kilometer"),
        "m²": _same("vierkante meter"),
    },
    scales={"duizend": Scale("duizend"), "miljoen": Scale("miljoen"), "miljard": Scale("miljard")},
    abbreviations=(
        Abbreviation("dhr.", "de heer"),
        Abbreviation("mevr.", "mevrouw"),
        Abbreviation("dr.", "doctor"),
        Abbreviation("prof.", "professor"),
        Abbreviation("mr.", "meester"),
        Abbreviation("ir.", "ingenieur"),
        Abbreviation("ing.", "ingenieur"),
        Abbreviation("bijv.", "bijvoorbeeld"),
        Abbreviation("d.w.z.", "dat wil zeggen"),
        Abbreviation("enz.", "enzovoort", ends_sentence=True),
        Abbreviation("etc.", "et cetera", ends_sentence=True),
        Abbreviation("o.a.", "onder andere"),
        Abbreviation("ca.", "circa"),
        Abbreviation("nr.", "nummer"),
        Abbreviation("m.b.t.", "met betrekking tot"),
        Abbreviation("i.p.v.", "in plaats van"),
        Abbreviation("t.o.v.", "ten opzichte van"),
        Abbreviation("z.s.m.", "zo snel mogelijk", ends_sentence=True),
        Abbreviation("St.", "Sint", before=r"\s+[A-Z]"),
        Abbreviation("blz.", "bladzijde"),
        Abbreviation("tel.", "telefoon"),
    ),
    emoji={
        "heart": "hart",
        "thumbs_up": "duim omhoog",
        "smile": "glimlach",
        "laugh": "lach",
        "sad": "verdrietig gezicht",
    },
    fractions={
        "1/2": "een half",
        "1/3": "een derde",
        "2/3": "twee derde",
        "1/4": "een kwart",
        "3/4": "drie kwart",
    },
    year_words=frozenset(
        {"in", "sinds", "tot", "van", "vanaf", "jaar", "rond", "begin", "eind", "medio", "tussen"}
    ),
    ordinal_marks=r"ste|de|e",
    time_suffix="uur",
)
