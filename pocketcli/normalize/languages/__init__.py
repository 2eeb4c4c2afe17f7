"""The languages normalisation knows, and how pockettts language ids map to them.

A pockettts language id names a model ("french_24l", "english_2026-04"); its
base language is the part before the first underscore, and that decides
how text is read.
"""

from __future__ import annotations

from pocketcli.errors import UnknownLanguageError
from pocketcli.normalize.languages import (
    dutch,
    english,
    french,
    german,
    italian,
    portuguese,
    spanish,
)
from pocketcli.normalize.languages.base import Language

__all__ = ["LANGUAGES", "SUPPORTED_LANGUAGES", "UnknownLanguageError", "Language", "resolve"]

LANGUAGES: dict[str, Language] = {
    module.LANGUAGE.name: module.LANGUAGE
    for module in (english, french, german, italian, portuguese, spanish, dutch)
}
SUPPORTED_LANGUAGES: tuple[str, ...] = tuple(LANGUAGES)


def resolve(language: str) -> Language:
    """The `Language` for a pockettts language id such as "french_24l"."""
    base = language.strip().lower().split("_", 1)[0] if isinstance(language, str) else ""
    try:
        return LANGUAGES[base]
    except KeyError:
        raise UnknownLanguageError(
            f"unknown language {language!r}; supported: {', '.join(SUPPORTED_LANGUAGES)} "
            "(and their model variants, e.g. french_24l or english_2026-04)"
        ) from None
