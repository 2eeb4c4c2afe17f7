"""URLs and e-mail addresses: read the way people say them, or dropped.

"https://www.example.com/docs?page=2" is said "w w w dot example dot com
slash docs": the scheme, the query and the fragment carry nothing a listener
needs. Digits inside an address are read one by one ("mail2" -> "mail two"),
never as a number. With "drop" the address disappears.
"""

from __future__ import annotations

import re

from pocketcli.normalize import numbers
from pocketcli.normalize.languages.base import Language
from pocketcli.normalize.rewrite import substitute

__all__ = ["MODES", "read_web"]

MODES = ("read", "drop")

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
# Letters that can stand next to an address after the character pass. Only
# letters decide where an address starts or ends: digits and symbols around
# it become words later, so they must not change what counts as an address.
_LETTER = r"A-Za-zÀ-ÖØ-öø-ÿŒœẞ"
_EMAIL = re.compile(
    rf"(?<![{_LETTER}0-9._%+-])[A-Za-z0-9][A-Za-z0-9._%+-]*@{_LABEL}(?:\.{_LABEL})*\.[A-Za-z]{{2,}}(?![{_LETTER}@])"
)
_PATH = r"(?:/[^\s<>\"']*[^\s<>\"'.,;:!?)\]])?/?"
_URL = re.compile(
    rf"(?<![{_LETTER}.-])(?:(?:https?|ftp)://|www\.)[^\s<>\"'/]*[^\s<>\"'/.,;:!?)\]]{_PATH}"
)
_TLDS = "com|org|net|edu|gov|info|io|ai|dev|app|co|uk|us|eu|de|fr|it|es|nl|pt|br|ch|be|at|ca|au"
# A domain starts at a word's start: never after a letter or digit (else each digit of
# "0.999..." is a start, and each start tries the rest of the run: quadratic).
_DOMAIN = re.compile(rf"(?<![{_LETTER}0-9.-])(?:{_LABEL}\.)+(?:{_TLDS})(?![{_LETTER}-]){_PATH}")
_PIECES = re.compile(r"[A-Za-z]+|[0-9]+|[^A-Za-z0-9]")


def _spell(part: str, lang: Language, separators: dict[str, str]) -> str:
    """Letters as they are, digits one by one, known separators as words, others dropped."""
    said = []
    for piece in _PIECES.findall(part):
        if piece.isdigit():
            said.append(numbers.digits(piece, lang.code))
        elif piece.isalpha():
            said.append(piece)
        elif piece in separators:
            said.append(separators[piece])
    return " ".join(said)


def _address(url: str, lang: Language) -> str:
    w = lang.words
    url = re.sub(r"^(?:https?|ftp)://", "", url)
    url = re.split(r"[?#]", url, maxsplit=1)[0]
    host, _, path = url.partition("/")
    host = host.split("@")[-1].split(":")[0]
    labels = [
        "w w w" if label.lower() == "www" else _spell(label, lang, {"-": w.dash})
        for label in host.split(".")
        if label
    ]
    said = f" {w.dot} ".join(labels)
    for segment in path.split("/"):
        if segment:
            said += f" {w.slash} " + _spell(
                segment, lang, {"-": w.dash, "_": w.underscore, ".": w.dot}
            )
    return said


def _email(address: str, lang: Language) -> str:
    w = lang.words
    local, _, domain = address.partition("@")
    local_said = _spell(local, lang, {".": w.dot, "_": w.underscore, "-": w.dash, "+": w.plus})
    return f"{local_said} {w.at} {_address(domain, lang)}"


def read_web(text: str, lang: Language, urls: str = "read", emails: str = "read") -> str:
    """Say or drop the e-mail addresses and URLs in `text`."""
    text = substitute(_EMAIL, text, lambda m: _email(m[0], lang) if emails == "read" else "")
    for pattern in (_URL, _DOMAIN):
        text = substitute(pattern, text, lambda m: _address(m[0], lang) if urls == "read" else "")
    return text
