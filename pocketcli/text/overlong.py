"""A safety net for chunks the reference would leave over the token limit.

pocket-tts only splits at sentence marks and then at ``, ; :``; a text with
neither (a pasted transcript, 1 MB without punctuation) stays one chunk that
the model cannot speak (it skips words and runs for hours). Such chunks, and
only those, are cut at word boundaries into pieces that fit. Text the
reference can chunk is untouched, so normal output stays equal to it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from pocketcli.text.chunking import ChunkPlan, plan_chunks
from pocketcli.text.rules import TextRules
from pocketcli.text.tokenizer import Tokenizer


def _word_pieces(tokenizer: Tokenizer, text: str, max_tokens: int) -> Iterator[str]:
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


def split_overlong(
    tokenizer: Tokenizer,
    plans: Sequence[ChunkPlan],
    rules: TextRules,
    max_tokens: int,
    frames_after_eos: int | None,
    frame_rate: float,
) -> list[ChunkPlan]:
    out: list[ChunkPlan] = []
    for plan in plans:
        if len(plan.token_ids) <= max_tokens:
            out.append(plan)
            continue
        # Leave room for the terminal punctuation that preparation adds to each piece.
        for piece in _word_pieces(tokenizer, plan.text, max(1, max_tokens - 2)):
            out.extend(
                plan_chunks(
                    tokenizer, piece, rules, max_tokens, frames_after_eos, frame_rate=frame_rate
                )
            )
    return out
