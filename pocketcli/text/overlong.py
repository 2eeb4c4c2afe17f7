"""A safety net for chunks the reference would leave over the token limit.

pocket-tts only splits at sentence marks and then at ``, ; :``; a text with
neither (a pasted transcript, 1 MB without punctuation) stays one chunk that
the model cannot speak (it skips words and runs for hours). Such chunks, and
only those, are cut at word boundaries into pieces that fit; a single word
longer than a chunk (a 100,000-character "word") is cut between its tokens.
Text the reference can chunk is untouched, so normal output stays equal to it.
Plans are produced lazily, so memory does not grow with the text.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from pocketcli.text.chunking import ChunkPlan, plan_chunks
from pocketcli.text.rules import TextRules
from pocketcli.text.tokenizer import Tokenizer

# Room for what preparation adds to a piece (terminal punctuation, a word-start id).
_PREPARATION_ROOM = 2


def _word_pieces(tokenizer: Tokenizer, text: str, max_tokens: int) -> Iterator[str]:
    """Whole words packed into pieces of at most ``max_tokens`` tokens; an overlong
    word is a piece of its own (cut further by ``_token_pieces``)."""
    piece: list[str] = []
    for word in text.split():
        candidate = " ".join([*piece, word])
        if piece and len(tokenizer.encode(candidate)) > max_tokens:
            yield " ".join(piece)
            piece = [word]
        else:
            piece.append(word)
    if piece:
        yield " ".join(piece)


def _token_pieces(tokenizer: Tokenizer, text: str, size: int) -> Iterator[str]:
    """``text`` cut between tokens into pieces of ``size`` ids (for one overlong word)."""
    ids = tokenizer.encode(text)
    for start in range(0, len(ids), size):
        piece = tokenizer.decode(ids[start : start + size]).strip()
        if piece:
            yield piece


def _fitting_plans(
    tokenizer: Tokenizer,
    text: str,
    rules: TextRules,
    max_tokens: int,
    frames_after_eos: int | None,
    frame_rate: float,
    size: int,
) -> Iterator[ChunkPlan]:
    """Plans for ``text``; one that does not fit is cut between tokens into pieces
    of ``size`` ids, and those again at half the size if re-encoding still
    leaves them too long (down to single tokens, so this always ends)."""
    for plan in plan_chunks(
        tokenizer, text, rules, max_tokens, frames_after_eos, frame_rate=frame_rate
    ):
        if len(plan.token_ids) <= max_tokens or size < 1:
            yield plan
            continue
        for piece in _token_pieces(tokenizer, plan.text, size):
            yield from _fitting_plans(
                tokenizer, piece, rules, max_tokens, frames_after_eos, frame_rate, size // 2
            )


def split_overlong(
    tokenizer: Tokenizer,
    plans: Iterable[ChunkPlan],
    rules: TextRules,
    max_tokens: int,
    frames_after_eos: int | None,
    frame_rate: float,
) -> Iterator[ChunkPlan]:
    """``plans`` with every plan over ``max_tokens`` replaced by pieces that fit."""
    room = max(1, max_tokens - _PREPARATION_ROOM)
    for plan in plans:
        if len(plan.token_ids) <= max_tokens:
            yield plan
            continue
        for piece in _word_pieces(tokenizer, plan.text, room):
            yield from _fitting_plans(
                tokenizer, piece, rules, max_tokens, frames_after_eos, frame_rate, room
            )
