"""A version glued to a letter ("v2.0.1", "iOS17.2.1") is read as the version alone is,
in every pack language: a user's sweep (fourth session) heard "v two point zero.one", the
first two parts read as a decimal and the last dot left in the text."""

from __future__ import annotations

import pytest

from pocketcli.normalize import normalize_text

LANGUAGES = ["english", "french", "german", "spanish", "italian", "portuguese", "dutch"]


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("glued, apart", [("v2.0.1", "v 2.0.1"), ("V10.4.2", "V 10.4.2")])
def test_a_version_after_a_letter_is_the_version(lang, glued, apart) -> None:
    said = normalize_text(f"Update to {glued} now", lang)
    assert said == normalize_text(f"Update to {apart} now", lang)
    assert "." not in said


def test_the_english_words() -> None:
    assert normalize_text("Get v2.0.1 today.", "english") == "Get v two dot zero dot one today."
