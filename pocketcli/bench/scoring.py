"""Word and character error rates, with the same text normalisation on both sides."""

from __future__ import annotations

import contextlib
import re
import unicodedata


def normalize_for_scoring(text: str, language: str | None = None) -> str:
    """Numbers and symbols read out (when ``language`` has a normaliser), then lower
    case, no punctuation, single spaces: "3 km" and "three kilometres" score alike."""
    if language is not None:
        from pocketcli.normalize import UnknownLanguageError, normalize_text

        with contextlib.suppress(UnknownLanguageError):  # other languages: as written
            text = normalize_text(text, language)
    text = unicodedata.normalize("NFKC", text).casefold()
    text = "".join(ch if (ch.isalnum() or ch.isspace() or ch == "'") else " " for ch in text)
    text = re.sub(r"(?<!\w)'|'(?!\w)", " ", text)
    return " ".join(text.split())


def edit_distance(a: list[str] | str, b: list[str] | str) -> int:
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, start=1):
        current = [i]
        for j, y in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return previous[-1]


def wer(reference: str, hypothesis: str, language: str | None = None) -> float:
    ref = normalize_for_scoring(reference, language).split()
    hyp = normalize_for_scoring(hypothesis, language).split()
    if not ref:
        return 0.0 if not hyp else 1.0
    return edit_distance(ref, hyp) / len(ref)


def cer(reference: str, hypothesis: str, language: str | None = None) -> float:
    ref = normalize_for_scoring(reference, language).replace(" ", "")
    hyp = normalize_for_scoring(hypothesis, language).replace(" ", "")
    if not ref:
        return 0.0 if not hyp else 1.0
    return edit_distance(ref, hyp) / len(ref)
