"""German: "1.234,5", "am 3. März", "vierzehn Uhr dreißig", "neunzehnhundertneunzig".

A number followed by a period is an ordinal only where German makes that
clear (see `pocketcli.normalize.ordinals`); its ending follows the word
before it: "am dritten", "der dritte", and the bare "dritter" otherwise.
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
    "Januar",
    "Februar",
    "März",
    "April",
    "Mai",
    "Juni",
    "Juli",
    "August",
    "September",
    "Oktober",
    "November",
    "Dezember",
)

# After these the ordinal takes -en ("am dritten", "vom ersten", "des zweiten").
_WEAK_DATIVE = frozenset(
    {
        "am",
        "im",
        "vom",
        "zum",
        "beim",
        "dem",
        "den",
        "des",
        "einem",
        "einen",
        "eines",
        "diesem",
        "diesen",
        "jedem",
        "jeden",
    }
)
# After these it keeps the -e num2words gives ("der dritte", "die erste").
_WEAK_NOMINATIVE = frozenset(
    {"der", "die", "das", "jeder", "jede", "jedes", "dieser", "diese", "dieses"}
)
ARTICLES = _WEAK_DATIVE | _WEAK_NOMINATIVE


def _agree(words: str, n: int, gender: str) -> str:
    if words == "eins":
        return "eine" if gender == "f" else "ein"
    return words


def _ordinal(n: int, mark: str, previous: str) -> str:
    word = numbers.ordinal(n, "de")
    if not word.endswith("e"):
        return word
    previous = previous.lower()
    if previous in _WEAK_DATIVE:
        return word + "n"
    if previous in _WEAK_NOMINATIVE:
        return word
    return word + "r"


def _date(day: int | None, month: int, year: int | None, previous: str) -> str:
    said = MONTHS[month - 1]
    if day is not None:
        said = f"{_ordinal(day, '.', previous)} {said}"
    if year is not None:
        said += f" {numbers.year(year, 'de')}"
    return said


def _time(hour: int, minute: int) -> str:
    said = f"{_agree(numbers.cardinal(hour, 'de'), hour, 'f')} Uhr"
    if minute:
        said += f" {numbers.cardinal(minute, 'de')}"
    return said.replace("eine Uhr", "ein Uhr")


def _same(word: str, gender: str = "m") -> Noun:
    return Noun(word, word, gender)


LANGUAGE = Language(
    name="german",
    code="de",
    decimal_separator=",",
    group_separators=". ",
    day_first=True,
    letters="äöüßÄÖÜẞ",
    words=Words(
        point="Komma",
        minus="minus",
        percent="Prozent",
        to="bis",
        and_="und",
        plus="plus",
        equals="gleich",
        at="at",
        dot="Punkt",
        slash="Slash",
        dash="Bindestrich",
        underscore="Unterstrich",
        number="Nummer",
        hashtag="Hashtag",
        ampersand="und",
        degree=_same("Grad", "n"),
        seconds=Noun("Sekunde", "Sekunden", "f"),
    ),
    months=MONTHS,
    months_case_sensitive=True,
    grammar=Grammar(agree=_agree, ordinal=_ordinal, date=_date, time=_time),
    currencies={
        "USD": Currency(_same("Dollar"), _same("Cent")),
        "EUR": Currency(_same("Euro"), _same("Cent")),
        "GBP": Currency(_same("Pfund", "n"), Noun("Penny", "Pence")),
        "JPY": Currency(_same("Yen"), None),
        "CHF": Currency(_same("Franken"), _same("Rappen")),
    },
    units={
        "km": _same("Kilometer"),
        "m": _same("Meter"),
        "cm": _same("Zentimeter"),
        "mm": _same("Millimeter"),
        "kg": _same("Kilogramm", "n"),
        "g": _same("Gramm", "n"),
        "mg": _same("Milligramm", "n"),
        "l": _same("Liter"),
        "ml": _same("Milliliter"),
        "km/h": _same("Kilometer pro Stunde"),
        "mph": Noun("Meile pro Stunde", "Meilen pro Stunde", "f"),
        "°C": _same("Grad Celsius", "n"),
        "°F": _same("Grad Fahrenheit", "n"),
        "h": Noun("Stunde", "Stunden", "f"),
        "min": Noun("Minute", "Minuten", "f"),
        "s": Noun("Sekunde", "Sekunden", "f"),
        "ms": Noun("Millisekunde", "Millisekunden", "f"),
        "km²": _same("Quadratkilometer"),
        "m²": _same("Quadratmeter"),
    },
    scales={
        "Tausend": Scale("Tausend"),
        "Million": Scale("Million", gender="f"),
        "Millionen": Scale("Millionen", gender="f"),
        "Milliarde": Scale("Milliarde", gender="f"),
        "Milliarden": Scale("Milliarden", gender="f"),
        "Mio.": Scale("Millionen", gender="f"),
        "Mrd.": Scale("Milliarden", gender="f"),
    },
    abbreviations=(
        Abbreviation("Dr.", "Doktor"),
        Abbreviation("Prof.", "Professor"),
        Abbreviation("Hr.", "Herr"),
        Abbreviation("Hrn.", "Herrn"),
        Abbreviation("Fr.", "Frau", before=r"\s+[A-ZÄÖÜ]"),
        Abbreviation("z. B.", "zum Beispiel"),
        Abbreviation("d. h.", "das heißt"),
        Abbreviation("u. a.", "unter anderem"),
        Abbreviation("z. T.", "zum Teil"),
        Abbreviation("u. U.", "unter Umständen"),
        Abbreviation("usw.", "und so weiter", ends_sentence=True),
        Abbreviation("etc.", "et cetera", ends_sentence=True),
        Abbreviation("bzw.", "beziehungsweise"),
        Abbreviation("ca.", "circa"),
        Abbreviation("evtl.", "eventuell"),
        Abbreviation("ggf.", "gegebenenfalls"),
        Abbreviation("inkl.", "inklusive"),
        Abbreviation("vgl.", "vergleiche"),
        Abbreviation("bspw.", "beispielsweise"),
        Abbreviation("Nr.", "Nummer"),
        Abbreviation("Str.", "Straße", ends_sentence=True),
        Abbreviation("St.", "Sankt", before=r"\s+[A-ZÄÖÜ]"),
        Abbreviation("Mio.", "Millionen"),
        Abbreviation("Mrd.", "Milliarden"),
        Abbreviation("Tel.", "Telefon"),
        Abbreviation("Jh.", "Jahrhundert", ends_sentence=True),
    ),
    emoji={
        "heart": "Herz",
        "thumbs_up": "Daumen hoch",
        "smile": "Lächeln",
        "laugh": "Lachen",
        "sad": "trauriges Gesicht",
    },
    fractions={
        "1/2": "ein halb",
        "1/3": "ein Drittel",
        "2/3": "zwei Drittel",
        "1/4": "ein Viertel",
        "3/4": "drei Viertel",
    },
    year_words=frozenset(
        {
            "im",
            "jahr",
            "jahre",
            "jahres",
            "seit",
            "bis",
            "von",
            "ab",
            "anno",
            "anfang",
            "ende",
            "mitte",
            "zwischen",
            "sommer",
            "winter",
            "herbst",
            "frühjahr",
            "frühling",
        }
    ),
    ordinal_marks=r"\.",
    decade_suffix="er",
    time_suffix="Uhr",
    period_ordinal_after=ARTICLES | {"ab", "bis", "seit", "zum", "vom"},
)
