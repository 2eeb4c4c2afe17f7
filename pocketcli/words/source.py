"""The user's own words behind normalised text: ``$5`` is captioned ``$5``, spoken "five
dollars" (issue 35 item 4).

The words are timed on the text as spoken (each piece of speech normalised); ``owners``
says which of the user's tokens each spoken word came from, by a word-level diff of the
two texts: words normalisation left alone pair one to one, and a stretch it rewrote goes
to the tokens it came from (one token: all of it; several: each token's own reading,
when their lengths add up, else the stretch as one caption of the user's text).
``UserWords`` then puts the timed spoken words of one token together: one word, from the
start of its first to the end of its last, said once its last word is decided.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher

from pocketcli.words.align import Word
from pocketcli.words.units import normalized_word, word_spans

# Punctuation at a token's edges that is not part of the word a caption shows.
_EDGES = frozenset(",;:!?\"'“”‘’«»()[]{}…¿¡")


@dataclass(frozen=True)
class Token:
    """A word as the user wrote it (``$5``, ``Dr``, ``U.S.``), its place among them."""

    text: str
    index: int


def user_tokens(text: str) -> list[Token]:
    """``text``'s whitespace-separated tokens, without the punctuation around them (an
    ellipsis or a final period too, unless the token holds another: ``e.g.`` keeps its
    own)."""
    tokens: list[Token] = []
    for piece in text.split():
        begin, end = 0, len(piece)
        while begin < end and piece[begin] in _EDGES:
            begin += 1
        while end > begin and piece[end - 1] in _EDGES:
            end -= 1
        dots = len(piece[begin:end]) - len(piece[begin:end].rstrip("."))
        if dots > 1 or (dots == 1 and "." not in piece[begin : end - 1]):
            end -= dots  # an ellipsis, or a sentence's period (not e.g.'s own)
        if end > begin:
            tokens.append(Token(piece[begin:end], len(tokens)))
    return tokens


def _share(tokens: Sequence[Token], count: int, reading: Callable[[str], str]) -> list[Token]:
    """The owners of ``count`` spoken words a stretch of ``tokens`` was rewritten into."""
    if len(tokens) == 1:
        return [tokens[0]] * count
    lengths = [len(word_spans(reading(t.text))) for t in tokens]
    if sum(lengths) == count:
        return [t for t, n in zip(tokens, lengths, strict=True) for _ in range(n)]
    merged = Token(" ".join(t.text for t in tokens), tokens[0].index)
    return [merged] * count


def owners(original: str, spoken: str, reading: Callable[[str], str]) -> list[Token | None]:
    """For each word of ``spoken`` (``units.word_spans``), the user's token of ``original``
    it came from (None: a word normalisation added between tokens). ``reading``: how
    normalisation reads one token alone."""
    tokens = user_tokens(original)
    said = [normalized_word(spoken[b:e]) for b, e in word_spans(spoken)]
    mine = [normalized_word(t.text) for t in tokens]
    out: list[Token | None] = [None] * len(said)
    matcher = SequenceMatcher(None, mine, said, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            out[j1:j2] = tokens[i1:i2]
        elif j2 > j1 and i2 > i1:
            out[j1:j2] = _share(tokens[i1:i2], j2 - j1, reading)
    return out


@dataclass
class SpokenParts:
    """What a normalised script was made of, recorded as it is planned: each piece of
    speech as written and as spoken, and which piece each chunk belongs to."""

    reading: Callable[[str], str]
    pieces: list[tuple[str, str]] = field(default_factory=list)  # (as written, as spoken)
    chunk_piece: list[int] = field(default_factory=list)  # per chunk, its piece
    first_word: list[int] = field(default_factory=list)  # per piece timed, its first word
    owned: list[list[Token | None]] = field(default_factory=list)
    token_base: list[int] = field(default_factory=list)  # per piece timed, tokens before
    _tokens: list[int] = field(default_factory=list)  # per piece timed, its tokens

    def piece(self, written: str, spoken: str) -> None:
        self.pieces.append((written, spoken))

    def chunk(self) -> None:
        self.chunk_piece.append(len(self.pieces) - 1)

    def spoken_text(self, chunk_index: int, words_so_far: int) -> str | None:
        """The spoken text of the chunk's piece when the chunk is its first to be timed
        (the words stage adds it to the source; None: already added)."""
        piece = self.chunk_piece[chunk_index]
        if piece < len(self.first_word):
            return None
        while len(self.first_word) <= piece:  # a piece none of whose chunks came: none
            written, spoken = self.pieces[len(self.first_word)]
            before = self.token_base[-1] + self._tokens[-1] if self.token_base else 0
            self.token_base.append(before)
            self._tokens.append(len(user_tokens(written)))
            self.first_word.append(words_so_far)
            self.owned.append(owners(written, spoken, self.reading))
        return self.pieces[piece][1]

    def owner(self, index: int) -> tuple[tuple[int, int], Token, bool] | None:
        """(key, token, whether it is the token's last spoken word) of spoken word
        ``index`` (the source's), None when it is no token's."""
        piece = bisect.bisect_right(self.first_word, index) - 1
        if piece < 0:
            return None
        owned = self.owned[piece]
        local = index - self.first_word[piece]
        if local >= len(owned) or owned[local] is None:
            return None
        token = owned[local]
        assert token is not None
        last = local + 1 == len(owned) or owned[local + 1] is not token
        key = (piece, token.index)
        return key, Token(token.text, self.token_base[piece] + token.index), last


class UserWords:
    """A ``WordTimer``'s spoken words as the user's tokens (``feed``/``end`` as the
    timer's): a token's words are held until its last is decided, then said as one."""

    def __init__(self, timer: object, parts: SpokenParts | None) -> None:
        self.timer = timer
        self.parts = parts  # None: the words as spoken (a session's text not normalised)
        self.held: tuple[tuple[int, int], Word] | None = None

    def feed(self, chunk_index: int, audio: object, attention: object) -> list[Word]:
        return self._regroup(self.timer.feed(chunk_index, audio, attention))  # type: ignore[attr-defined]

    def end(self) -> list[Word]:
        out = self._regroup(self.timer.end())  # type: ignore[attr-defined]
        return out + self._release()

    def _release(self) -> list[Word]:
        held, self.held = self.held, None
        return [held[1]] if held is not None else []

    def _regroup(self, words: list[Word]) -> list[Word]:
        if self.parts is None:
            return words
        out: list[Word] = []
        for word in words:
            found = self.parts.owner(word.index)
            if found is None:
                out += self._release()
                out.append(word)
                continue
            key, token, last = found
            if self.held is not None and self.held[0] != key:
                out += self._release()
            start = self.held[1].start if self.held is not None else word.start
            self.held = key, Word(token.text, start, word.end, token.index)
            if last:
                out += self._release()
        return out
