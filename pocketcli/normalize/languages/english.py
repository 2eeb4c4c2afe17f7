"""English: month-first numeric dates, "nineteen ninety" years, American spelling.

Numbers follow the American reading (no "and": "one hundred one"); years in
a year context use the paired reading num2words gives ("twenty twenty-four").
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
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


def _ordinal(n: int, mark: str, previous: str) -> str:
    return numbers.ordinal(n, "en")


def _date(day: int | None, month: int, year: int | None, previous: str) -> str:
    said = MONTHS[month - 1]
    if day is not None:
        said += f" {numbers.ordinal(day, 'en')}"
    if year is not None:
        said += f"{',' if day is not None else ''} {numbers.year(year, 'en')}"
    return said


def _time(hour: int, minute: int) -> str:
    said = numbers.cardinal(hour, "en")
    if minute == 0:
        return f"{said} o'clock" if 1 <= hour <= 12 else f"{said} hundred"
    if minute < 10:
        return f"{said} oh {numbers.cardinal(minute, 'en')}"
    return f"{said} {numbers.cardinal(minute, 'en')}"


def _noun(singular: str, plural: str | None = None) -> Noun:
    return Noun(singular, plural if plural is not None else singular + "s")


LANGUAGE = Language(
    name="english",
    code="en",
    decimal_separator=".",
    group_separators=", ",
    day_first=False,
    # Accented letters the English tokenizer has pieces for (names, loanwords).
    # The diaeresis and circumflex of loanwords too ("naïve", "Zoë", "maître"), so that no
    # accent of an English spelling is dropped while another is kept ("Café").
    letters="àáâãäåçèéêëíîïñóôöøúüÀÁÂÃÄÅÇÈÉÊËÍÎÏÑÓÔÖØÚÜ",
    words=Words(
        point="point",
        minus="minus",
        percent="percent",
        to="to",
        and_="and",
        plus="plus",
        equals="equals",
        at="at",
        dot="dot",
        slash="slash",
        dash="dash",
        underscore="underscore",
        number="number",
        hashtag="hashtag",
        ampersand="and",
        degree=_noun("degree"),
        seconds=_noun("second"),
    ),
    months=MONTHS,
    month_aliases={
        "jan": 1,
        "feb": 2,
        "mar": 3,
        "apr": 4,
        "jun": 6,
        "jul": 7,
        "aug": 8,
        "sep": 9,
        "sept": 9,
        "oct": 10,
        "nov": 11,
        "dec": 12,
    },
    months_case_sensitive=True,
    grammar=Grammar(ordinal=_ordinal, date=_date, time=_time),
    currencies={
        "USD": Currency(_noun("dollar"), _noun("cent")),
        "EUR": Currency(_noun("euro"), _noun("cent")),
        "GBP": Currency(_noun("pound"), Noun("penny", "pence")),
        "JPY": Currency(Noun("yen", "yen"), None),
        "CHF": Currency(_noun("Swiss franc"), _noun("centime")),
    },
    units={
        "km": _noun("kilometer"),
        "m": _noun("meter"),
        "cm": _noun("centimeter"),
        "mm": _noun("millimeter"),
        "kg": _noun("kilogram"),
        "g": _noun("gram"),
        "mg": _noun("milligram"),
        "l": _noun("liter"),
        "ml": _noun("milliliter"),
        "km/h": Noun("kilometer per hour", "kilometers per hour"),
        "mph": Noun("mile per hour", "miles per hour"),
        "°C": Noun("degree Celsius", "degrees Celsius"),
        "°F": Noun("degree Fahrenheit", "degrees Fahrenheit"),
        "h": _noun("hour"),
        "min": _noun("minute"),
        "s": _noun("second"),
        "ms": _noun("millisecond"),
        "km²": Noun("square kilometer", "square kilometers"),
        "m²": Noun("square meter", "square meters"),
    },
    scales={
        "thousand": Scale("thousand"),
        "million": Scale("million"),
        "billion": Scale("billion"),
        "trillion": Scale("trillion"),
        "k": Scale("thousand"),
        "m": Scale("million"),
        "bn": Scale("billion"),
    },
    abbreviations=(
        Abbreviation("Dr.", "Doctor", before=r"\s+[A-Z]"),
        Abbreviation("Dr.", "Drive", ends_sentence=True),
        Abbreviation("Mr.", "Mister"),
        Abbreviation("Mrs.", "Missus"),
        Abbreviation("Ms.", "Miz"),
        Abbreviation("Prof.", "Professor"),
        Abbreviation("Jr.", "Junior", ends_sentence=True),
        Abbreviation("Sr.", "Senior", ends_sentence=True),
        Abbreviation("St.", "Saint", before=r"\s+[A-Z]"),
        Abbreviation("St.", "Street", ends_sentence=True),
        Abbreviation("Mt.", "Mount"),
        Abbreviation("Ave.", "Avenue", ends_sentence=True),
        Abbreviation("etc.", "et cetera", ends_sentence=True),
        Abbreviation("e.g.", "for example"),
        Abbreviation("i.e.", "that is"),
        Abbreviation("vs.", "versus"),
        Abbreviation("approx.", "approximately"),
        Abbreviation("No.", "number", before=r"\s?\d"),
        Abbreviation("no.", "number", before=r"\s?\d"),
        Abbreviation("cf.", "compare"),
        Abbreviation("Inc.", "Incorporated", ends_sentence=True),
        Abbreviation("Ltd.", "Limited", ends_sentence=True),
        Abbreviation("Dept.", "Department"),
    ),
    emoji={
        "heart": "heart",
        "thumbs_up": "thumbs up",
        "smile": "smile",
        "laugh": "laughing",
        "sad": "sad face",
    },
    fractions={
        "1/2": "one half",
        "1/3": "one third",
        "2/3": "two thirds",
        "1/4": "one quarter",
        "3/4": "three quarters",
    },
    year_words=frozenset(
        {
            "in",
            "since",
            "from",
            "until",
            "till",
            "by",
            "of",
            "year",
            "circa",
            "around",
            "before",
            "after",
            "during",
        }
    ),
    ordinal_marks=r"st|nd|rd|th",
    decade_suffix="s",
    date_of="of",
    meridiem=True,
)
