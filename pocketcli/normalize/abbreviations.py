"""Abbreviations said in full: "Dr. Smith" -> "Doctor Smith", "z. B." -> "zum Beispiel".

Each language lists its own (see `languages/`). An abbreviation written
lower-case also matches capitalised at a sentence start, and its expansion
is then capitalised too. Internal spaces are optional ("z.B." = "z. B.").
Where an abbreviation can end a sentence ("etc.") and does (end of text, or
a capital follows), its period is kept so the chunker still splits there.

Abbreviations that only count before a digit ("No. 5") must run before
numbers become words; the others run last, on the final text, so nothing a
later pass writes can make one match the second time round.
"""

from __future__ import annotations

import re

from pocketcli.normalize.languages.base import Abbreviation, Language
from pocketcli.normalize.rewrite import ends_sentence_at, substitute

__all__ = ["expand_abbreviations"]

_compiled: dict[str, list[tuple[re.Pattern[str], Abbreviation]]] = {}


def _pattern(abbreviation: Abbreviation) -> re.Pattern[str]:
    written = abbreviation.written
    parts = []
    for i, ch in enumerate(written):
        if ch == " ":
            continue
        parts.append(re.escape(ch))
        if ch == "." and i + 1 < len(written):
            parts.append(r"\s*")
    first = written[0]
    if first.islower():
        parts[0] = f"[{first}{first.upper()}]"
    end = "" if written.endswith(".") else r"(?!\w)"
    before = f"(?={abbreviation.before})" if abbreviation.before else ""
    return re.compile(rf"(?<!\w){''.join(parts)}{end}{before}")


def _patterns(lang: Language) -> list[tuple[re.Pattern[str], Abbreviation]]:
    if lang.name not in _compiled:
        _compiled[lang.name] = [(_pattern(a), a) for a in lang.abbreviations]
    return _compiled[lang.name]


def _say(match: re.Match[str], abbreviation: Abbreviation, text: str) -> str:
    spoken = abbreviation.spoken
    if match[0][0].isupper() and spoken[0].islower():
        spoken = spoken[0].upper() + spoken[1:]
    if abbreviation.ends_sentence and ends_sentence_at(text, match.end()):
        spoken += "."
    return spoken


def expand_abbreviations(text: str, lang: Language, *, before_digits: bool) -> str:
    """Expand the abbreviations whose context is a digit (`before_digits`) or the others."""
    for pattern, abbreviation in _patterns(lang):
        if (abbreviation.before is not None and r"\d" in abbreviation.before) != before_digits:
            continue
        current = text
        text = substitute(pattern, current, lambda m, a=abbreviation, t=current: _say(m, a, t))
    return text
