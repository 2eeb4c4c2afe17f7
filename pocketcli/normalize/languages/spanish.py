"""Spanish: "1.234,5", "quince de marzo de dos mil veinticuatro", "1.º", "1.ª".

Cardinals shorten before masculine nouns ("veintiún kilómetros") and turn
feminine before feminine ones ("una hora", "doscientas libras").
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
)
from pocketcli.normalize.languages.romance import agreeing_tail, feminine_ordinal

MONTHS = (
    "enero",
    "febrero",
    "marzo",
    "abril",
    "mayo",
    "junio",
    "julio",
    "agosto",
    "septiembre",
    "octubre",
    "noviembre",
    "diciembre",
)


def _feminine(words: str) -> str:
    words = re.sub(r"ientos\b", "ientas", words)
    return re.sub(r"uno$", "una", words)


def _masculine(words: str) -> str:
    words = re.sub(r"veintiuno$", "veintiún", words)
    return re.sub(r"\buno$", "un", words)


_FEMININE = agreeing_tail("millón|millones|billón|billones", _feminine)
_MASCULINE = agreeing_tail("millón|millones|billón|billones", _masculine)


def _agree(words: str, n: int, gender: str) -> str:
    return _FEMININE(words) if gender == "f" else _MASCULINE(words)


def _ordinal(n: int, mark: str, previous: str) -> str:
    words = numbers.ordinal(n, "es")
    if mark.lstrip(".") in ("ª", "ra", "da", "ta"):
        return feminine_ordinal(words)
    if mark == "er":
        return re.sub(r"(primer|tercer)o$", r"\1", words)
    return words


def _date(day: int | None, month: int, year: int | None, previous: str) -> str:
    said = MONTHS[month - 1]
    if day is not None:
        said = f"{numbers.cardinal(day, 'es')} de {said}"
    if year is not None:
        said += f" de {numbers.year(year, 'es')}"
    return said


def _time(hour: int, minute: int) -> str:
    said = _agree(numbers.cardinal(hour, "es"), hour, "f")
    if minute:
        return f"{said} y {numbers.cardinal(minute, 'es')}"
    return said if hour == 1 else f"{said} horas"  # "a la una", "a las trece horas"


def _noun(singular: str, gender: str = "m", plural: str | None = None) -> Noun:
    return Noun(singular, plural if plural is not None else singular + "s", gender)


LANGUAGE = Language(
    name="spanish",
    code="es",
    decimal_separator=",",
    group_separators=".",  # "912 345 678" is a phone number in Spain
    day_first=True,
    letters="áéíñóúüÁÉÍÑÓÚÜ",
    words=Words(
        point="coma",
        minus="menos",
        percent="por ciento",
        to="a",
        and_="con",
        plus="más",
        equals="igual a",
        at="arroba",
        dot="punto",
        slash="barra",
        dash="guion",
        underscore="guion bajo",
        number="número",
        hashtag="hashtag",
        ampersand="y",
        degree=_noun("grado"),
        seconds=_noun("segundo"),
    ),
    months=MONTHS,
    grammar=Grammar(agree=_agree, ordinal=_ordinal, date=_date, time=_time),
    currencies={
        "USD": Currency(Noun("dólar", "dólares"), _noun("centavo")),
        "EUR": Currency(_noun("euro"), _noun("céntimo")),
        "GBP": Currency(_noun("libra", "f"), _noun("penique")),
        "JPY": Currency(Noun("yen", "yenes"), None),
        "CHF": Currency(Noun("franco suizo", "francos suizos"), _noun("céntimo")),
    },
    units={
        "km": _noun("kilómetro"),
        "m": _noun("metro"),
        "cm": _noun("centímetro"),
        "mm": _noun("milímetro"),
        "kg": _noun("kilogramo"),
        "g": _noun("gramo"),
        "mg": _noun("miligramo"),
        "l": _noun("litro"),
        "ml": _noun("mililitro"),
        "km/h": Noun("kilómetro por hora", "kilómetros por hora"),
        "mph": Noun("milla por hora", "millas por hora", "f"),
        "°C": Noun("grado Celsius", "grados Celsius"),
        "°F": Noun("grado Fahrenheit", "grados Fahrenheit"),
        "h": _noun("hora", "f"),
        "min": _noun("minuto"),
        "s": _noun("segundo"),
        "ms": _noun("milisegundo"),
        "km²": Noun("kilómetro cuadrado", "kilómetros cuadrados"),
        "m²": Noun("metro cuadrado", "metros cuadrados"),
    },
    scales={
        "mil": Scale("mil"),
        "millón": Scale("millón", "de"),
        "millones": Scale("millones", "de"),
        "billón": Scale("billón", "de"),
        "billones": Scale("billones", "de"),
    },
    abbreviations=(
        Abbreviation("Sr.", "señor"),
        Abbreviation("Sra.", "señora"),
        Abbreviation("Srta.", "señorita"),
        Abbreviation("Sres.", "señores"),
        Abbreviation("Dr.", "doctor"),
        Abbreviation("Dra.", "doctora"),
        Abbreviation("Prof.", "profesor"),
        Abbreviation("Ud.", "usted"),
        Abbreviation("Uds.", "ustedes"),
        Abbreviation("Vd.", "usted"),
        Abbreviation("etc.", "etcétera", ends_sentence=True),
        Abbreviation("p. ej.", "por ejemplo"),
        Abbreviation("aprox.", "aproximadamente"),
        Abbreviation("núm.", "número"),
        Abbreviation("n.º", "número", before=r"\s?\d"),
        Abbreviation("nº", "número", before=r"\s?\d"),
        Abbreviation("pág.", "página"),
        Abbreviation("Avda.", "avenida"),
        Abbreviation("Av.", "avenida"),
        Abbreviation("EE. UU.", "Estados Unidos", ends_sentence=True),
        Abbreviation("Sto.", "santo"),
        Abbreviation("Sta.", "santa"),
        Abbreviation("tel.", "teléfono"),
    ),
    emoji={
        "heart": "corazón",
        "thumbs_up": "pulgar arriba",
        "smile": "sonrisa",
        "laugh": "risa",
        "sad": "cara triste",
    },
    fractions={
        "1/2": "un medio",
        "1/3": "un tercio",
        "2/3": "dos tercios",
        "1/4": "un cuarto",
        "3/4": "tres cuartos",
    },
    year_words=frozenset(),
    ordinal_marks=r"\.?[ºª]|er|ra|ro|da|do|ta|to",
    date_of="del|de",
)
