"""Characters the model's tokenizer cannot represent, turned into words or removed.

Pocket TTS tokenizers spell Latin letters; anything else (emoji, pictographs,
control and formatting characters, other scripts, rare symbols) either
falls back to byte pieces the model never learned to say, or to nothing
useful, which is what makes TTS garble (FluidAudio issue #931). This pass
runs first, so every later pass sees a small, predictable alphabet:

- a few emoji are said in words (the `EMOJI` table: heart, thumbs up, smile,
  laughing, sad face), every other emoji and pictograph is dropped;
- letters outside the language's alphabet lose their accents ("ł" -> "l",
  "ř" -> "r"; French keeps "é", German keeps "ß"); letters of other
  scripts, which a Latin-script model cannot say, are dropped;
- digits of other scripts become ASCII digits so that numbers are read;
- control and formatting characters are dropped, odd spaces become spaces;
- the symbols later passes read ($ € £ ¥ % ° º ª & @ + = # / ² ³ and common
  fractions) and the usual typographic punctuation are kept; other symbols
  are dropped.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from pocketcli.normalize.languages.base import Language
from pocketcli.normalize.rewrite import substitute, tidy_spaces

__all__ = ["EMOJI", "clean"]

# Emoji said in words, by concept; each language names the concept.
EMOJI: dict[str, str] = {
    "\u2764": "heart",
    "\u2665": "heart",
    "\U0001f496": "heart",
    "\U0001f44d": "thumbs_up",
    "\U0001f642": "smile",
    "\U0001f600": "smile",
    "\U0001f603": "smile",
    "\U0001f60a": "smile",
    "\U0001f602": "laugh",
    "\U0001f923": "laugh",
    "\U0001f641": "sad",
    "\u2639": "sad",
    "\U0001f622": "sad",
}
_EMOJI_RE = re.compile(f"(?:{'|'.join(map(re.escape, EMOJI))})\ufe0f?")

# Read by later passes (currency, units, ordinals, symbols).
_KEPT_SYMBOLS = frozenset("$€£¥°ºª²³%&@+=#/½¼¾⅓⅔")
_KEPT_PUNCTUATION = frozenset("‘’“”„«»‹›…–—¿¡")
_SAME_AS = {
    "\u2212": "-",
    "\u2010": "-",
    "\u2011": "-",
    "\u2012": "-",
    "\u2044": "/",
    "\u2215": "/",
    "\r": "\n",
    "\u2028": "\n",
    "\u2029": "\n",
    "\x85": "\n",
    "\t": " ",
    "\v": " ",
    "\f": " ",
}
# Letters that do not decompose into a base letter plus accents.
_FOLD = {
    "ß": "ss",
    "ẞ": "SS",
    "æ": "ae",
    "Æ": "AE",
    "œ": "oe",
    "Œ": "OE",
    "ø": "o",
    "Ø": "O",
    "đ": "d",
    "Đ": "D",
    "ł": "l",
    "Ł": "L",
    "þ": "th",
    "Þ": "Th",
    "ð": "d",
    "Ð": "D",
    "ı": "i",
    "ŋ": "n",
    "Ŋ": "N",
    "ħ": "h",
    "Ħ": "H",
}


@lru_cache(maxsize=65536)
def _character(ch: str, letters: str) -> str:
    """What one character becomes for a language whose extra letters are `letters`."""
    if ch == "\n" or " " <= ch <= "~" or ch in letters:
        return ch
    if ch in _SAME_AS:
        return _SAME_AS[ch]
    if ch in _KEPT_SYMBOLS or ch in _KEPT_PUNCTUATION:
        return ch
    category = unicodedata.category(ch)
    if category == "Nd":
        return str(unicodedata.decimal(ch, ""))
    if category in ("Zs",):
        return " "
    if category in ("Zl", "Zp"):
        return "\n"
    if category[0] == "L":
        if ch in _FOLD:
            return _FOLD[ch]
        base = "".join(c for c in unicodedata.normalize("NFKD", ch) if not unicodedata.combining(c))
        return base if base and all(c.isascii() and c.isalpha() for c in base) else ""
    if category[0] == "N":  # circled, superscript or Roman numerals
        compat = unicodedata.normalize("NFKC", ch)
        return compat if compat.isascii() and compat.isalnum() else " "
    # Marks and format characters sit inside words (soft hyphen, joiners);
    # a dropped symbol or control character separates what is around it.
    return "" if category[0] == "M" or category == "Cf" else " "


def clean(text: str, lang: Language) -> str:
    """`text` over the alphabet later passes expect; see the module docstring."""
    text = unicodedata.normalize("NFC", text)
    text = substitute(_EMOJI_RE, text, lambda m: lang.emoji[EMOJI[m[0].rstrip("\ufe0f")]])
    text = "".join(_character(ch, lang.letters) for ch in text)
    return tidy_spaces(text)
