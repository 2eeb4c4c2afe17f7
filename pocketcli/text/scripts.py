"""Why a text has nothing to say: the writing systems a model cannot read, named.

Text in a script the model's tokenizer has no pieces for (Cyrillic for an English
model) is read out to nothing; "only symbols?" would then be wrong. ``nothing_to_say``
names the scripts of the letters that were there (from their Unicode names), so the
message says what the user can change.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Iterable

_NAMES = {"CJK": "Chinese (CJK)", "HANGUL": "Korean (Hangul)"}  # a clearer word for a few
_SHOWN = 3  # scripts named at most


def scripts_of(text: str) -> list[str]:
    """The non-Latin scripts of the letters in ``text``, most letters first."""
    found: Counter[str] = Counter()
    for char in text:
        if not unicodedata.category(char).startswith("L"):
            continue
        first = unicodedata.name(char, "").split(" ")[0]
        if first and first != "LATIN":
            found[_NAMES.get(first, first.capitalize())] += 1
    return [name for name, _ in found.most_common()]


def nothing_to_say(texts: Iterable[str], language: str | None) -> str:
    """The message of a text that is read out to nothing: its scripts named if it had
    letters this model cannot read, else "only symbols?"."""
    scripts = scripts_of(" ".join(texts))
    if not scripts:
        return "nothing to say once the text is read out (only symbols?)"
    model = f"the {language} model" if language else "this model"
    named = ", ".join(scripts[:_SHOWN]) + (" ..." if len(scripts) > _SHOWN else "")
    return (
        f"nothing to say once the text is read out: {model} cannot read {named} letters"
        " (write the text in its language's script)"
    )
