"""What a language contributes to normalisation: words, names, patterns and grammar.

Each supported language is one immutable `Language` value, so the passes in
`pocketcli.normalize` are written once and read their vocabulary from here.
The grammar that words alone cannot carry (gender agreement of "one" before a
noun, German ordinal endings, how a date or a clock time is said) is a small
set of functions per language, stored on the same value.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal

__all__ = ["Abbreviation", "Currency", "Grammar", "Language", "Noun", "Scale", "Words"]


@dataclass(frozen=True)
class Noun:
    """A unit or currency name with the grammatical gender ("m", "f" or "n") it imposes."""

    singular: str
    plural: str
    gender: str = "m"


@dataclass(frozen=True)
class Currency:
    """A currency's main unit and, if it has one people say, its hundredth."""

    main: Noun
    cents: Noun | None


@dataclass(frozen=True)
class Scale:
    """A word like "million" written after an amount ("$2 million").

    `spoken` replaces what was written (e.g. the abbreviation "bn");
    `of_before_noun` is what joins it to a following noun ("de" in
    "deux millions de dollars"), empty where the language joins nothing.
    """

    spoken: str
    of_before_noun: str = ""
    of_before_vowel: str | None = None  # French "d'" in "deux millions d'euros"
    gender: str = "m"  # of the scale word itself: German "eine Million"


@dataclass(frozen=True)
class Abbreviation:
    """A written abbreviation and what is said for it.

    `before` is a regular expression the text right after the abbreviation
    must match (e.g. "No." only means "number" before a digit).
    `ends_sentence` marks abbreviations that often end a sentence ("etc."):
    there the period is kept after the expansion, so the chunker still sees
    the sentence end.
    """

    written: str
    spoken: str
    before: str | None = None
    ends_sentence: bool = False


@dataclass(frozen=True)
class Words:
    """The little words the passes put between numbers and around symbols."""

    point: str  # decimal separator, "3.5"
    minus: str
    percent: str
    to: str  # ranges, "5-10"
    and_: str  # "five dollars and ten cents"
    plus: str
    equals: str
    at: str  # "@" and e-mail addresses
    dot: str  # host names, versions
    slash: str
    dash: str  # "-" inside a URL
    underscore: str
    number: str  # "#1", "No. 1"
    hashtag: str
    ampersand: str
    degree: Noun
    seconds: Noun  # "14:30:15"


@dataclass(frozen=True)
class Grammar:
    """Language rules that are functions rather than words.

    - `agree(words, n, gender)`: the cardinal `words` for `n` as said right
      before a noun of `gender` (French "une heure", German "ein Kilometer").
    - `ordinal(n, mark, previous_word)`: the ordinal for `n`; `mark` is the
      written suffix ("er", "ª", "." ...) which can carry gender, and the
      previous word decides German endings ("am dritten").
    - `date(day, month, year, previous_word)`: a full date; `year` may be None.
    - `time(hour, minute)`: a 24-hour clock time.
    - `singular(value)`: whether a noun after this amount is singular.
    - `phrase(number, noun)`: the number said before the noun, joined the way
      the language joins them (Italian elides "una ora" to "un'ora").
    """

    ordinal: Callable[[int, str, str], str]
    date: Callable[[int, int, int | None, str], str]
    time: Callable[[int, int], str]
    # Defaults: numbers that do not agree with nouns, and nouns singular only after 1.
    agree: Callable[[str, int, str], str] = lambda words, n, gender: words
    singular: Callable[[Decimal], bool] = lambda value: value == 1
    phrase: Callable[[str, str], str] = lambda number, noun: f"{number} {noun}"


def singular_below_two(value: Decimal) -> bool:
    """French and Portuguese keep the noun singular below 2 ("1,5 kilomètre")."""
    return value < 2


@dataclass(frozen=True)
class Language:
    """Everything one language contributes; see the module docstring."""

    name: str
    code: str  # num2words language code
    decimal_separator: str
    group_separators: str  # characters that group thousands ("," or "." or " .")
    day_first: bool  # 03/04/2024 is the 3rd of April
    letters: str  # non-ASCII letters kept as they are; others lose their accents
    words: Words
    months: tuple[str, ...]  # twelve names as written in running text
    grammar: Grammar
    currencies: Mapping[str, Currency]  # keyed by ISO code
    units: Mapping[str, Noun]  # keyed by the written symbol
    scales: Mapping[str, Scale]  # keyed by the written word
    abbreviations: tuple[Abbreviation, ...]
    emoji: Mapping[str, str]
    fractions: Mapping[str, str]  # "1/2" -> words
    year_words: frozenset[str]  # a 4-digit number right after one of these is a year
    ordinal_marks: str  # regex of the written ordinal suffixes after the digits
    month_aliases: Mapping[str, int] = field(default_factory=dict)
    months_case_sensitive: bool = False
    decade_suffix: str | None = None  # "1990s" (en), "1990er" (de)
    time_suffix: str | None = None  # a word written after a clock time and spoken by it ("Uhr")
    degree_sign_is_ordinal: bool = False  # Italian and Portuguese "1°" = first
    date_of: str = ""  # regex of the word between day, month and year ("de" in Spanish)
    meridiem: bool = False  # clock times may carry "am"/"pm" (English)
    hour_mark: str | None = None  # "14h30" (French)
    phone_pairs: bool = False  # phone digits said in pairs (French)
    period_ordinal_after: frozenset[str] = frozenset()  # "am 3." is an ordinal (German)
