"""Names made of symbols ("C++", "C#") and runs of symbols, read as people say them, in every pack
language; accented letters of English loanwords kept alike ("naïve" as "Café")."""

from __future__ import annotations

import pytest

from pocketcli.normalize import normalize_text

# The language's word for "+", "=" and "@", as its symbol rules say them alone.
PLUS = {
    "english": "plus",
    "french": "plus",
    "german": "plus",
    "spanish": "más",
    "italian": "più",
    "portuguese": "mais",
    "dutch": "plus",
}
EQUALS = {
    "english": "equals",
    "french": "égale",
    "german": "gleich",
    "spanish": "igual a",
    "italian": "uguale",
    "portuguese": "igual a",
    "dutch": "is gelijk aan",
}
AT = {
    "english": "at",
    "french": "arobase",
    "german": "at",
    "spanish": "arroba",
    "italian": "chiocciola",
    "portuguese": "arroba",
    "dutch": "apenstaartje",
}
HASHTAG = {lang: "Hashtag" if lang == "german" else "hashtag" for lang in PLUS}
LANGUAGES = sorted(PLUS)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_plus_plus_is_said_as_two_words(lang: str) -> None:
    plus = PLUS[lang]
    assert normalize_text("C++ and Notepad++.", lang).startswith(f"C {plus} {plus} ")
    assert normalize_text("I like C++.", lang).endswith(f"C {plus} {plus}.")


def test_a_version_after_the_name_is_a_number() -> None:
    assert normalize_text("C++11 and C#7", "english") == "C plus plus eleven and C sharp seven"


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_letter_then_hash_is_sharp(lang: str) -> None:
    assert normalize_text("C# or F#", lang) == "C sharp or F sharp"
    # A hashtag stays a hashtag, a number sign a number sign.
    assert normalize_text("#news", lang) == f"{HASHTAG[lang]} news"


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_doubled_symbol_is_said_once(lang: str) -> None:
    assert normalize_text("x == y", lang) == f"x {EQUALS[lang]} y"


@pytest.mark.parametrize("lang", LANGUAGES)
def test_symbols_side_by_side_are_separate_words(lang: str) -> None:
    assert normalize_text("a @# b", lang) == f"a {AT[lang]} {HASHTAG[lang]} b"


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("text", ["@@@ ###", "+++", "===", "@#@#"])
def test_a_run_of_symbols_is_decoration_and_dropped(lang: str, text: str) -> None:
    assert normalize_text(text, lang) == ""
    assert normalize_text(f"Intro {text} end.", lang) == "Intro end."


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("A naïve Café.", "A naïve Café."),
        ("Zoë and Noël.", "Zoë and Noël."),
        ("The maître d'.", "The maître d'."),
        ("NAÏVE", "NAÏVE"),
    ],
)
def test_english_keeps_the_diaeresis_as_it_keeps_the_acute(text: str, said: str) -> None:
    assert normalize_text(text, "english") == said


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("text", ["C++11 and C#7", "x == y", "@@@ ### C#", "naïve"])
def test_a_second_normalisation_changes_nothing(lang: str, text: str) -> None:
    once = normalize_text(text, lang)
    assert normalize_text(once, lang) == once
