"""Word and character error rates, with the same text normalisation on both sides."""

from __future__ import annotations

import re
import unicodedata


def normalize_for_scoring(text: str) -> str:
    """Lower case, no punctuation, single spaces (Unicode letters and digits kept)."""
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


def wer(reference: str, hypothesis: str) -> float:
    ref = normalize_for_scoring(reference).split()
    hyp = normalize_for_scoring(hypothesis).split()
    if not ref:
        return 0.0 if not hyp else 1.0
    return edit_distance(ref, hyp) / len(ref)


def cer(reference: str, hypothesis: str) -> float:
    ref = normalize_for_scoring(reference).replace(" ", "")
    hyp = normalize_for_scoring(hypothesis).replace(" ", "")
    if not ref:
        return 0.0 if not hyp else 1.0
    return edit_distance(ref, hyp) / len(ref)
