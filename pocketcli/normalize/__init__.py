"""Text normalisation: what the model should say for text people write.

A layer before the text front-end (`pocketcli.text`), which stays equal to
the reference: nothing here runs unless called. `normalize_text` turns
numbers, dates, money, units, abbreviations, symbols, URLs and characters
the tokenizer cannot represent into words for one of the pack languages;
`parse_markup` splits text with `[pause]` markers or SSML into speech and
pauses.
"""

from pocketcli.normalize.languages import SUPPORTED_LANGUAGES, UnknownLanguageError
from pocketcli.normalize.markup import parse_markup
from pocketcli.normalize.pipeline import normalize_text
from pocketcli.normalize.timeline import (
    BREAK_STRENGTHS,
    DEFAULT_PAUSE_SECONDS,
    MAX_PAUSE_SECONDS,
    MarkupError,
    Pause,
    Speech,
)

__all__ = [
    "BREAK_STRENGTHS",
    "DEFAULT_PAUSE_SECONDS",
    "MAX_PAUSE_SECONDS",
    "SUPPORTED_LANGUAGES",
    "MarkupError",
    "Pause",
    "Speech",
    "UnknownLanguageError",
    "normalize_text",
    "parse_markup",
]
