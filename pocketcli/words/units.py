"""The text side of word timings: the user's words, the units of a chunk, the token map.

The method is pocket-tts-timestamped's (1.4.0), rewritten here: the source text's words are
runs of letters and digits (with their combining marks, joined across ``-`` and ``'`` when a
letter follows); each chunk the model speaks (its prepared text, NFKC) is cut into units:
the source words it holds, runs of punctuation between them, and prepared words no source
word matches. A token's weight goes to the units its characters overlap, in proportion, so
a token's attention is shared out between units and a unit's score is the sum of its part.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

_FOLD = str.maketrans({"’": "'", "‐": "-", "‑": "-"})
_CONTINUATIONS = frozenset("-‐‑'’")


@dataclass(frozen=True)
class SourceWord:
    """One word of the user's text: its characters and where they are in that text."""

    text: str
    index: int
    begin: int
    end: int


@dataclass(frozen=True)
class Unit:
    """A piece of a chunk's prepared text: a word, or punctuation (``word`` None).
    ``added``: punctuation the text preparation added (not the user's), or a prepared
    word no source word was matched with."""

    begin: int
    end: int
    word: SourceWord | None
    added: bool = False


@dataclass(frozen=True)
class ChunkUnits:
    """A chunk's units and its tokens' shares of them (``token_to_unit [tokens, units]``)."""

    units: tuple[Unit, ...]
    token_to_unit: np.ndarray

    @property
    def word_units(self) -> list[int]:
        return [i for i, unit in enumerate(self.units) if unit.word is not None]


def normalized_word(text: str) -> str:
    folded = unicodedata.normalize("NFKC", text).casefold().translate(_FOLD)
    return "".join(c for c in folded if c.isalnum() or c in "'-")


def _is_mark(c: str) -> bool:
    return unicodedata.category(c).startswith("M")


def word_spans(text: str) -> list[tuple[int, int]]:
    """Where ``text``'s words are (see the module's docstring)."""
    spans, i, n = [], 0, len(text)
    while i < n:
        if not text[i].isalnum():
            i += 1
            continue
        begin = i
        while True:
            while i < n and (text[i].isalnum() or _is_mark(text[i])):
                i += 1
            if i + 1 < n and text[i] in _CONTINUATIONS and text[i + 1].isalnum():
                i += 1
                continue
            break
        if normalized_word(text[begin:i]):
            spans.append((begin, i))
    return spans


def source_words(text: str) -> list[SourceWord]:
    return [SourceWord(text[b:e], k, b, e) for k, (b, e) in enumerate(word_spans(text))]


class UnitMaker:
    """Units of the chunks spoken for ``source``, one chunk at a time, in order.

    A chunk's prepared words are paired with the source's next words when they agree word
    for word (the normal case: preparation only capitalises and punctuates). Otherwise only
    words that occur once in the chunk and once in the rest of the source are paired, in
    order; the others are left untimed rather than guessed."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.words = source_words(source)
        self.next = 0  # the first source word no chunk has taken yet

    def extend(self, text: str) -> None:
        """More source text (a text spoken as it comes: each chunk its own source)."""
        shift = len(self.source) + 1
        self.source += " " + text
        for w in source_words(text):
            self.words.append(SourceWord(w.text, len(self.words), w.begin + shift, w.end + shift))

    def _pairs(self, text: str, spans: list[tuple[int, int]]) -> list[tuple[SourceWord, int]]:
        """(source word, index into ``spans``) pairs for one chunk."""
        theirs = [normalized_word(text[b:e]) for b, e in spans]
        rest = self.words[self.next :]
        mine = [normalized_word(w.text) for w in rest[: len(spans)]]
        if mine == theirs:
            return [(w, i) for i, w in enumerate(rest[: len(spans)])]
        keys = [normalized_word(w.text) for w in rest]
        counts, their_counts = Counter(keys), Counter(theirs)
        where = {key: i for i, key in enumerate(theirs)}
        pairs: list[tuple[SourceWord, int]] = []
        last = -1
        for word, key in zip(rest, keys, strict=True):
            if counts[key] == 1 and their_counts[key] == 1 and where[key] > last:
                last = where[key]
                pairs.append((word, last))
        return pairs

    def units(self, text: str, pieces: Sequence[tuple[int, int]], coordinates: str) -> ChunkUnits:
        """The units of the next chunk ``text`` (prepared, NFKC) and its tokens' map;
        ``pieces``: its tokens' ``(begin, end)`` in ``coordinates`` ("byte" or "char")."""
        spans = word_spans(text)
        pairs = self._pairs(text, spans)
        paired = {i for _, i in pairs}
        units = [Unit(*spans[i], word) for word, i in pairs]
        units += [Unit(b, e, None, added=True) for i, (b, e) in enumerate(spans) if i not in paired]
        if pairs:
            self.next = pairs[-1][0].index + 1
        units += _punctuation(self.source, self.words, text, units)
        units.sort(key=lambda u: (u.begin, u.end))
        return ChunkUnits(tuple(units), _token_map(text, units, pieces, coordinates))


def _punctuation(source: str, words: list[SourceWord], text: str, units: list[Unit]) -> list[Unit]:
    """Runs of punctuation not inside a unit; after the chunk's last word, punctuation the
    source has not there (before its next word) was added by the text preparation."""
    covered = [False] * len(text)
    for u in units:
        covered[u.begin : u.end] = [True] * (u.end - u.begin)
    mapped = [u for u in units if u.word is not None]
    last = mapped[-1] if mapped else None
    out, i = [], 0
    while i < len(text):
        if covered[i] or not unicodedata.category(text[i]).startswith("P"):
            i += 1
            continue
        j = i + 1
        while j < len(text) and not covered[j] and unicodedata.category(text[j]).startswith("P"):
            j += 1
        added = False
        if last is not None and i >= last.end and last.word is not None:
            w = last.word
            stop = words[w.index + 1].begin if w.index + 1 < len(words) else len(source)
            added = not any(unicodedata.category(c).startswith("P") for c in source[w.end : stop])
        out.append(Unit(i, j, None, added))
        i = j
    return out


def _token_map(
    text: str, units: Sequence[Unit], pieces: Sequence[tuple[int, int]], unit: str
) -> np.ndarray:
    if unit == "byte":
        bounds = np.cumsum([0] + [len(c.encode("utf-8")) for c in text])
        spans = [(int(bounds[u.begin]), int(bounds[u.end])) for u in units]
    else:
        spans = [(u.begin, u.end) for u in units]
    shape = (len(pieces), len(spans))
    if not pieces or not spans:
        return np.zeros(shape, np.float32)
    pb = np.array([p[0] for p in pieces])[:, None]
    pe = np.array([p[1] for p in pieces])[:, None]
    ub = np.array([s[0] for s in spans])[None, :]
    ue = np.array([s[1] for s in spans])[None, :]
    overlap = np.clip(np.minimum(pe, ue) - np.maximum(pb, ub), 0, None).astype(np.float32)
    total = overlap.sum(axis=1, keepdims=True)
    return np.where(total > 0, overlap / np.maximum(total, 1), overlap).astype(np.float32)


def _byte_value(piece: str) -> int | None:
    if len(piece) == 6 and piece.startswith("<0x") and piece.endswith(">"):
        try:
            return int(piece[3:5], 16)
        except ValueError:
            return None
    return None


def _utf8_length(first: int) -> int:
    for low, high, n in ((0x00, 0x7F, 1), (0xC2, 0xDF, 2), (0xE0, 0xEF, 3), (0xF0, 0xF4, 4)):
        if low <= first <= high:
            return n
    return 1


def whole_characters(
    spans: Sequence[tuple[int, int]], pieces: Sequence[str]
) -> tuple[tuple[int, int], ...]:
    """Byte-fallback tokens (``<0xC3>`` ``<0xA9>``) each get their whole character's span."""
    out, i = list(spans), 0
    while i < len(pieces):
        first = _byte_value(pieces[i])
        if first is None:
            i += 1
            continue
        n = _utf8_length(first)
        values = [_byte_value(p) for p in pieces[i : i + n]]
        whole = len(values) == n and all(
            v is not None and (k == 0 or 0x80 <= v <= 0xBF) for k, v in enumerate(values)
        )
        end = i + n if whole else i + 1
        begin, stop = min(s[0] for s in spans[i:end]), max(s[1] for s in spans[i:end])
        if stop > begin:
            out[i:end] = [(begin, stop)] * (end - i)
        i = end
    return tuple(out)
