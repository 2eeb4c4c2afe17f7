"""Italian: "1.234,5", "primo maggio", "quattordici e trenta", "1°"/"1ª" ordinals.

The degree sign after a number is an ordinal ("il 2° posto") unless C or F
follows; "una" elides before a vowel ("un'ora").
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
from pocketcli.normalize.languages.romance import feminine_ordinal

MONTHS = (
    "gennaio",
    "febbraio",
    "marzo",
    "aprile",
    "maggio",
    "giugno",
    "luglio",
    "agosto",
    "settembre",
    "ottobre",
    "novembre",
    "dicembre",
)


def _agree(words: str, n: int, gender: str) -> str:
    if words == "uno":
        return "una" if gender == "f" else "un"
    return words


def _phrase(number: str, noun: str) -> str:
    if number.endswith("una") and noun[:1].lower() in "aeiou":
        return f"{number[:-1]}'{noun}"
    return f"{number} {noun}"


def _ordinal(n: int, mark: str, previous: str) -> str:
    words = numbers.ordinal(n, "it")
    return feminine_ordinal(words) if mark == "ª" else words


def _date(day: int | None, month: int, year: int | None, previous: str) -> str:
    said = MONTHS[month - 1]
    if day is not None:
        said = f"{'primo' if day == 1 else numbers.cardinal(day, 'it')} {said}"
    if year is not None:
        said += f" {numbers.year(year, 'it')}"
    return said


def _time(hour: int, minute: int) -> str:
    said = _agree(numbers.cardinal(hour, "it"), hour, "f")
    return f"{said} e {numbers.cardinal(minute, 'it')}" if minute else said


def _noun(singular: str, plural: str, gender: str = "m") -> Noun:
    return Noun(singular, plural, gender)


LANGUAGE = Language(
    name="italian",
    code="it",
    decimal_separator=",",
    group_separators=". ",
    day_first=True,
    letters="àèéìíîòóùúÀÈÉÌÍÎÒÓÙÚ",
    words=Words(
        point="virgola",
        minus="meno",
        percent="per cento",
        to="a",
        and_="e",
        plus="più",
        equals="uguale",
        at="chiocciola",
        dot="punto",
        slash="slash",
        dash="trattino",
        underscore="trattino basso",
        number="numero",
        hashtag="hashtag",
        ampersand="e",
        degree=_noun("grado", "gradi"),
        seconds=_noun("secondo", "secondi"),
    ),
    months=MONTHS,
    grammar=Grammar(agree=_agree, ordinal=_ordinal, date=_date, time=_time, phrase=_phrase),
    currencies={
        "USD": Currency(_noun("dollaro", "dollari"), _noun("centesimo", "centesimi")),
        "EUR": Currency(_noun("euro", "euro"), _noun("centesimo", "centesimi")),
        "GBP": Currency(_noun("sterlina", "sterline", "f"), _noun("penny", "pence")),
        "JPY": Currency(_noun("yen", "yen"), None),
        "CHF": Currency(
            _noun("franco svizzero", "franchi svizzeri"), _noun("centesimo", "centesimi")
        ),
    },
    units={
        "km": _noun("chilometro", "chilometri"),
        "m": _noun("metro", "metri"),
        "cm": _noun("centimetro", "centimetri"),
        "mm": _noun("millimetro", "millimetri"),
        "kg": _noun("chilogrammo", "chilogrammi"),
        "g": _noun("grammo", "grammi"),
        "mg": _noun("milligrammo", "milligrammi"),
        "l": _noun("litro", "litri"),
        "ml": _noun("millilitro", "millilitri"),
        "km/h": _noun("chilometro orario", "chilometri orari"),
        "mph": _noun("miglio orario", "miglia orarie"),
        "°C": _noun("grado Celsius", "gradi Celsius"),
        "°F": _noun("grado Fahrenheit", "gradi Fahrenheit"),
        "h": _noun("ora", "ore", "f"),
        "min": _noun("minuto", "minuti"),
        "s": _noun("secondo", "secondi"),
        "ms": _noun("millisecondo", "millisecondi"),
        "km²": _noun("chilometro quadrato", "chilometri quadrati"),
        "m²": _noun("metro quadrato", "metri quadrati"),
    },
    scales={
        "mila": Scale("mila"),
        "milione": Scale("milione", "di"),
        "milioni": Scale("milioni", "di"),
        "miliardo": Scale("miliardo", "di"),
        "miliardi": Scale("miliardi", "di"),
    },
    abbreviations=(
        Abbreviation("Sig.ra", "Signora"),
        Abbreviation("Sig.na", "Signorina"),
        Abbreviation("Sig.", "Signor"),
        Abbreviation("Sigg.", "Signori"),
        Abbreviation("Dott.ssa", "Dottoressa"),
        Abbreviation("Dott.", "Dottor"),
        Abbreviation("Dr.", "Dottor"),
        Abbreviation("Dr.ssa", "Dottoressa"),
        Abbreviation("Prof.ssa", "Professoressa"),
        Abbreviation("Prof.", "Professor"),
        Abbreviation("Avv.", "Avvocato"),
        Abbreviation("Ing.", "Ingegner"),
        Abbreviation("ecc.", "eccetera", ends_sentence=True),
        Abbreviation("etc.", "eccetera", ends_sentence=True),
        Abbreviation("es.", "esempio"),
        Abbreviation("ca.", "circa"),
        Abbreviation("pag.", "pagina"),
        Abbreviation("n.", "numero", before=r"\s?\d"),
        Abbreviation("tel.", "telefono"),
    ),
    emoji={
        "heart": "cuore",
        "thumbs_up": "pollice in su",
        "smile": "sorriso",
        "laugh": "risata",
        "sad": "faccina triste",
    },
    fractions={
        "1/2": "un mezzo",
        "1/3": "un terzo",
        "2/3": "due terzi",
        "1/4": "un quarto",
        "3/4": "tre quarti",
    },
    year_words=frozenset(),
    ordinal_marks=r"[°ºª]",
    degree_sign_is_ordinal=True,
)
