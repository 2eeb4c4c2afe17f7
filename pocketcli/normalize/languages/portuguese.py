"""Portuguese (Brazilian numbers): "1.234,5", "primeiro de março", "duas horas", "1º", "1ª".

num2words' `pt_BR` is used ("dezesseis", "bilhão"); the European forms differ
in a few number words only. Nouns are singular below two, as in French.
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
from pocketcli.normalize.languages.romance import agreeing_tail, feminine_ordinal

MONTHS = (
    "janeiro",
    "fevereiro",
    "março",
    "abril",
    "maio",
    "junho",
    "julho",
    "agosto",
    "setembro",
    "outubro",
    "novembro",
    "dezembro",
)
CODE = "pt_BR"


def _feminine(words: str) -> str:
    words = re.sub(r"\bum\b", "uma", words)
    words = re.sub(r"\bdois\b", "duas", words)
    return re.sub(r"entos\b", "entas", words)


_FEMININE = agreeing_tail("milhão|milhões|bilhão|bilhões|trilhão|trilhões", _feminine)


def _agree(words: str, n: int, gender: str) -> str:
    return _FEMININE(words) if gender == "f" else words


def _ordinal(n: int, mark: str, previous: str) -> str:
    words = numbers.ordinal(n, CODE)
    return feminine_ordinal(words) if mark.endswith("ª") else words


def _date(day: int | None, month: int, year: int | None, previous: str) -> str:
    said = MONTHS[month - 1]
    if day is not None:
        said = f"{'primeiro' if day == 1 else numbers.cardinal(day, CODE)} de {said}"
    if year is not None:
        said += f" de {numbers.year(year, CODE)}"
    return said


def _time(hour: int, minute: int) -> str:
    said = _agree(numbers.cardinal(hour, CODE), hour, "f")
    if minute:
        return f"{said} e {numbers.cardinal(minute, CODE)}"
    return f"{said} {'hora' if hour <= 1 else 'horas'}"


def _noun(singular: str, gender: str = "m", plural: str | None = None) -> Noun:
    return Noun(singular, plural if plural is not None else singular + "s", gender)


LANGUAGE = Language(
    name="portuguese",
    code=CODE,
    decimal_separator=",",
    group_separators=". ",
    day_first=True,
    letters="áâãàçéêíóôõúüÁÂÃÀÇÉÊÍÓÔÕÚÜ",
    words=Words(
        point="vírgula",
        minus="menos",
        percent="por cento",
        to="a",
        and_="e",
        plus="mais",
        equals="igual a",
        at="arroba",
        dot="ponto",
        slash="barra",
        dash="hífen",
        underscore="sublinhado",
        number="número",
        hashtag="hashtag",
        ampersand="e",
        degree=Noun("grau", "graus"),
        seconds=_noun("segundo"),
    ),
    months=MONTHS,
    grammar=Grammar(
        agree=_agree, ordinal=_ordinal, date=_date, time=_time, singular=singular_below_two
    ),
    currencies={
        "USD": Currency(Noun("dólar", "dólares"), _noun("centavo")),
        "EUR": Currency(_noun("euro"), _noun("centavo")),
        "GBP": Currency(_noun("libra", "f"), Noun("pêni", "pence")),
        "JPY": Currency(_noun("iene"), None),
        "CHF": Currency(Noun("franco suíço", "francos suíços"), _noun("centavo")),
        "BRL": Currency(Noun("real", "reais"), _noun("centavo")),
    },
    units={
        "km": _noun("quilômetro"),
        "m": _noun("metro"),
        "cm": _noun("centímetro"),
        "mm": _noun("milímetro"),
        "kg": _noun("quilograma"),
        "g": _noun("grama"),
        "mg": _noun("miligrama"),
        "l": _noun("litro"),
        "ml": _noun("mililitro"),
        "km/h": Noun("quilômetro por hora", "quilômetros por hora"),
        "mph": Noun("milha por hora", "milhas por hora", "f"),
        "°C": Noun("grau Celsius", "graus Celsius"),
        "°F": Noun("grau Fahrenheit", "graus Fahrenheit"),
        "h": _noun("hora", "f"),
        "min": _noun("minuto"),
        "s": _noun("segundo"),
        "ms": _noun("milissegundo"),
        "km²": Noun("quilômetro quadrado", "quilômetros quadrados"),
        "m²": Noun("metro quadrado", "metros quadrados"),
    },
    scales={
        "mil": Scale("mil"),
        "milhão": Scale("milhão", "de"),
        "milhões": Scale("milhões", "de"),
        "bilhão": Scale("bilhão", "de"),
        "bilhões": Scale("bilhões", "de"),
    },
    abbreviations=(
        Abbreviation("Sr.", "senhor"),
        Abbreviation("Sra.", "senhora"),
        Abbreviation("Srta.", "senhorita"),
        Abbreviation("Dr.", "doutor"),
        Abbreviation("Dra.", "doutora"),
        Abbreviation("Prof.", "professor"),
        Abbreviation("Profa.", "professora"),
        Abbreviation("etc.", "etcétera", ends_sentence=True),
        Abbreviation("p. ex.", "por exemplo"),
        Abbreviation("aprox.", "aproximadamente"),
        Abbreviation("n.º", "número", before=r"\s?\d"),
        Abbreviation("nº", "número", before=r"\s?\d"),
        Abbreviation("pág.", "página"),
        Abbreviation("Av.", "avenida"),
        Abbreviation("tel.", "telefone"),
    ),
    emoji={
        "heart": "coração",
        "thumbs_up": "polegar para cima",
        "smile": "sorriso",
        "laugh": "risada",
        "sad": "rosto triste",
    },
    fractions={
        "1/2": "um meio",
        "1/3": "um terço",
        "2/3": "dois terços",
        "1/4": "um quarto",
        "3/4": "três quartos",
    },
    year_words=frozenset(),
    ordinal_marks=r"\.?[ºª°]",
    degree_sign_is_ordinal=True,
    date_of="de",
)
