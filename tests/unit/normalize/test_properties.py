"""Properties that must hold for any text: no digits out, idempotent, never raises."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pocketcli.errors import UserError
from pocketcli.normalize import (
    SUPPORTED_LANGUAGES,
    MarkupError,
    Pause,
    Speech,
    UnknownLanguageError,
    normalize_text,
    parse_markup,
)
from pocketcli.normalize.languages import LANGUAGES

# Text made of the pieces the passes react to, so examples hit their edges
# far more often than uniformly random characters would.
_PIECES = st.sampled_from(
    [
        "0",
        "1",
        "7",
        "12",
        "1990",
        "2024",
        "123456",
        "12345678901",
        ".",
        ",",
        " ",
        "-",
        "–",
        "/",
        ":",
        "%",
        "°",
        "º",
        "ª",
        "$",
        "€",
        "£",
        "¥",
        "USD",
        "CHF",
        "km",
        "h",
        "min",
        "s",
        "°C",
        "+",
        "=",
        "#",
        "&",
        "@",
        "st",
        "er",
        "e",
        "ste",
        "Dr.",
        "Mr.",
        "etc.",
        "z. B.",
        "Nr.",
        "n°",
        "nº",
        "am",
        "in",
        "de",
        "März",
        "March",
        "mars",
        "pm",
        "a.m.",
        "Uhr",
        "www.",
        "http://",
        "example.com",
        "a@b.org",
        "❤️",
        "👍",
        "🚀",
        "\u200d",
        "\x07",
        "\n",
        "ß",
        "é",
        "ł",
        "Ω",
        "東",
        "½",
        "²",
        "١",
        "①",
        "(",
        ")",
        "[",
        "'",
        '"',
        "É",
        "A",
    ]
)
_TEXT = st.one_of(
    st.lists(_PIECES, max_size=14).map("".join),
    st.text(max_size=40),
)
_SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_DIGIT = re.compile(r"[0-9]")


@pytest.mark.parametrize("language", SUPPORTED_LANGUAGES)
@_SETTINGS
@given(text=_TEXT)
def test_no_ascii_digits_and_idempotent(language: str, text: str) -> None:
    once = normalize_text(text, language)
    assert not _DIGIT.search(once)
    assert normalize_text(once, language) == once


@pytest.mark.parametrize("language", ["english", "german", "french"])
@settings(max_examples=60, deadline=None)
@given(
    text=st.text(max_size=30),
    urls=st.sampled_from(["read", "drop"]),
    emails=st.sampled_from(["read", "drop"]),
)
def test_modes_never_raise(language: str, text: str, urls: str, emails: str) -> None:
    once = normalize_text(text, language, urls=urls, emails=emails)
    assert normalize_text(once, language, urls=urls, emails=emails) == once


_MARKUP = st.lists(
    st.sampled_from(
        [
            "<speak>",
            "</speak>",
            "<break/>",
            '<break time="1s"/>',
            '<break time="x"/>',
            '<break strength="weak"/>',
            "<p>",
            "</p>",
            "<s>",
            "</s>",
            '<sub alias="x">',
            "</sub>",
            '<say-as interpret-as="cardinal">',
            '<say-as interpret-as="date">',
            "</say-as>",
            "<foo>",
            "</foo>",
            "[pause]",
            "[pause:2s]",
            "[pause:x]",
            "[pause:20s]",
            "&amp;",
            "&",
            "<",
            ">",
            "text",
            "12",
            " ",
            "\n",
            "<?xml version='1.0'?>",
        ]
    ),
    max_size=10,
).map("".join)


@settings(max_examples=200, deadline=None)
@given(
    text=st.one_of(_MARKUP, st.text(max_size=30)),
    ssml=st.sampled_from([None, True, False]),
    language=st.sampled_from(SUPPORTED_LANGUAGES),
)
def test_parse_markup_raises_only_markup_errors(
    text: str, ssml: bool | None, language: str
) -> None:
    try:
        items = parse_markup(text, ssml=ssml, language=language, on_warning=lambda m: None)
    except MarkupError as exc:
        assert isinstance(exc, UserError) and exc.line >= 1 and exc.column >= 1
        return
    for before, after in zip(items, items[1:], strict=False):
        assert not (isinstance(before, Speech) and isinstance(after, Speech))
    for item in items:
        assert isinstance(item, Speech | Pause)
        if isinstance(item, Pause):
            assert 0 < item.seconds <= 10


def test_unknown_language_lists_the_supported_ones() -> None:
    with pytest.raises(UnknownLanguageError) as info:
        normalize_text("3", "klingon")
    assert isinstance(info.value, UserError)
    for name in SUPPORTED_LANGUAGES:
        assert name in str(info.value)
    with pytest.raises(UnknownLanguageError):
        parse_markup("hi", language="elvish")


def test_bad_mode_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="urls"):
        normalize_text("x", "english", urls="spell")


@pytest.mark.parametrize("language", SUPPORTED_LANGUAGES)
def test_language_words_use_only_letters_the_language_keeps(language: str) -> None:
    """Words the passes write must survive the character pass, or a second run would change them."""
    lang = LANGUAGES[language]
    said = [
        *vars(lang.words).values(),
        *lang.months,
        *lang.emoji.values(),
        *lang.fractions.values(),
        *(a.spoken for a in lang.abbreviations),
    ]
    for noun in [
        *lang.units.values(),
        *(c.main for c in lang.currencies.values()),
        *(c.cents for c in lang.currencies.values() if c.cents),
    ]:
        said += [noun.singular, noun.plural]
    allowed = set(lang.letters) | set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ '-.")
    for text in said:
        words = [text.singular, text.plural] if hasattr(text, "singular") else [text]
        for word in words:
            assert set(word) <= allowed, (language, word)
