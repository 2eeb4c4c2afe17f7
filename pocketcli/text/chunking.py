"""Cut long text into model-sized chunks and plan the generation of each.

The model speaks one sentence-like prompt at a time and skips words when a
prompt gets too long, so text is split at sentence marks (or, for a single
overlong sentence, at commas, semicolons and colons) and the pieces are then
packed greedily into chunks of at most `max_tokens` tokens. Splitting works
on token ids rather than characters, as pocket-tts 4.0.1 does, so the chunks
are identical to the reference's.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass

from pocketcli import defaults
from pocketcli.text.prepare import prepare_text
from pocketcli.text.rules import TextRules
from pocketcli.text.tokenizer import Tokenizer

__all__ = [
    "DEFAULT_FRAME_RATE",
    "MAX_TOKENS_PER_CHUNK",
    "ChunkPlan",
    "max_generation_frames",
    "plan_chunks",
    "split_into_chunks",
]

logger = logging.getLogger(__name__)

MAX_TOKENS_PER_CHUNK = defaults.MAX_TOKENS
# Latent frames per second of every released Mimi codec (config `mimi.frame_rate`).
DEFAULT_FRAME_RATE = 12.5
# The generation budget assumes speech of at least 3 tokens per second, plus slack.
_TOKENS_PER_SECOND = 3.0
_SLACK_SECONDS = 2.0
# Extra frames on top of the prompt's own EOS guess when nothing is configured.
_EOS_TAIL_BONUS = 2

# Texts whose encodings (first id dropped) are the split points: the first id
# is the word-start marker or a BOS the tokenizer puts in front of any text.
_SENTENCE_MARKS_TEXT = ".!...?"
_PAUSE_MARKS_TEXT = ",;:"
# Ids decoded on each side of a candidate cut to see whether it splits a number.
_WINDOW = 8


@dataclass(frozen=True, slots=True)
class ChunkPlan:
    """One generation call: the exact prompt, its ids and the frame budgets.

    `text` is the chunk after its own `prepare_text` pass, i.e. the string
    whose ids are `token_ids`; `max_frames` caps the latent frames generated
    and `frames_after_eos` is how many frames to keep going once EOS fires.
    """

    text: str
    token_ids: tuple[int, ...]
    max_frames: int
    frames_after_eos: int

    @property
    def n_tokens(self) -> int:
        return len(self.token_ids)


def max_generation_frames(n_tokens: int, frame_rate: float = DEFAULT_FRAME_RATE) -> int:
    """Upper bound on latent frames for a prompt of `n_tokens` tokens."""
    seconds = n_tokens / _TOKENS_PER_SECOND + _SLACK_SECONDS
    return math.ceil(seconds * frame_rate)


def _mark_ids(tokenizer: Tokenizer, marks: str) -> frozenset[int]:
    """Ids of the punctuation tokens in `marks`, as the tokenizer spells them."""
    _leading, *ids = tokenizer.encode(marks)
    return frozenset(ids)


def _period_between_digits(ids: Sequence[int], cut: int, tokenizer: Tokenizer) -> bool:
    """Whether cutting before `ids[cut]` would split a number like "3.5".

    Decided on decoded text (a digit, a period, then a digit) since the
    tokenizer may glue digits and periods into tokens in any way.
    """
    # Only the two characters before the cut and the one after it matter: decode a
    # few ids on each side, not the whole text (that made 1 MB of text quadratic).
    start = max(0, cut - _WINDOW)
    before = tokenizer.decode(ids[start:cut])
    while len(before) < 2 and start > 0:
        start = max(0, start - _WINDOW)
        before = tokenizer.decode(ids[start:cut])
    after = tokenizer.decode(ids[cut : cut + _WINDOW])
    return (
        len(before) >= 2
        and before[-1] == "."
        and before[-2].isdigit()
        and bool(after)
        and after[0].isdigit()
    )


def _cut_points(
    ids: Sequence[int],
    marks: frozenset[int],
    tokenizer: Tokenizer | None = None,
) -> list[int]:
    """Positions delimiting segments: 0, each first id after a run of marks, len(ids).

    With a `tokenizer`, cuts that would split a decimal number are skipped.
    """
    cuts = [0]
    after_mark = False
    for position, token in enumerate(ids):
        if token in marks:
            after_mark = True
            continue
        if after_mark and not (
            tokenizer is not None and _period_between_digits(ids, position, tokenizer)
        ):
            cuts.append(position)
        after_mark = False
    cuts.append(len(ids))
    return cuts


def _segments(
    ids: Sequence[int], cuts: Sequence[int], tokenizer: Tokenizer
) -> list[tuple[int, str]]:
    """(token count, decoded text) of each span between consecutive cuts."""
    return [
        (end - start, tokenizer.decode(ids[start:end]))
        for start, end in zip(cuts, cuts[1:], strict=False)
    ]


def _split_long_sentence(
    tokenizer: Tokenizer, n_tokens: int, sentence: str, pause_marks: frozenset[int]
) -> list[tuple[int, str]]:
    """Break a sentence at commas/semicolons/colons; unchanged if it has none.

    The pieces' token counts come from re-encoding the stripped sentence,
    which can differ slightly from its count inside the full text.
    """
    ids = tokenizer.encode(sentence.strip())
    pieces = _segments(ids, _cut_points(ids, pause_marks), tokenizer)
    return pieces if len(pieces) > 1 else [(n_tokens, sentence)]


def _pack(segments: Sequence[tuple[int, str]], max_tokens: int) -> list[str]:
    """Greedily join consecutive segments while their summed counts fit."""
    chunks: list[str] = []
    current = ""
    current_tokens = 0
    for n_tokens, segment in segments:
        if current == "":
            current, current_tokens = segment, n_tokens
        elif current_tokens + n_tokens > max_tokens:
            chunks.append(current.strip())
            current, current_tokens = segment, n_tokens
        else:
            current += " " + segment
            current_tokens += n_tokens
    if current != "":
        chunks.append(current.strip())
    return chunks


def split_into_chunks(
    tokenizer: Tokenizer,
    text: str,
    rules: TextRules | None = None,
    max_tokens: int = MAX_TOKENS_PER_CHUNK,
) -> list[str]:
    """Split `text` into chunks of about `max_tokens` tokens at sentence boundaries.

    Same result as pocket-tts' `split_into_best_sentences`. The chunks are not
    yet in their final form: each one still goes through `prepare_text`
    (see `plan_chunks`). A chunk may exceed `max_tokens` when a sentence
    cannot be cut; that is logged, as the model may then skip words.
    Raises `EmptyTextError` for text with nothing to speak.
    """
    rules = rules if rules is not None else TextRules()
    prepared = prepare_text(text, rules).text.strip()
    ids = tokenizer.encode(prepared)

    sentence_marks = _mark_ids(tokenizer, _SENTENCE_MARKS_TEXT)
    sentences = _segments(ids, _cut_points(ids, sentence_marks, tokenizer), tokenizer)

    pause_marks = _mark_ids(tokenizer, _PAUSE_MARKS_TEXT)
    segments: list[tuple[int, str]] = []
    for n_tokens, sentence in sentences:
        if n_tokens <= max_tokens:
            segments.append((n_tokens, sentence))
        else:
            segments.extend(_split_long_sentence(tokenizer, n_tokens, sentence, pause_marks))

    chunks = _pack(segments, max_tokens)
    for chunk in chunks:
        n_tokens = len(tokenizer.encode(chunk.strip()))
        if n_tokens > max_tokens:
            # Debug only: PocketTTS.script cuts such chunks at words (text/overlong.py).
            logger.debug(
                "chunk of %d tokens exceeds %d, the model may skip words: %.50r",
                n_tokens,
                max_tokens,
                chunk,
            )
    return chunks


def plan_chunks(
    tokenizer: Tokenizer,
    text: str,
    rules: TextRules | None = None,
    max_tokens: int = MAX_TOKENS_PER_CHUNK,
    frames_after_eos: int | None = None,
    *,
    frame_rate: float = DEFAULT_FRAME_RATE,
) -> list[ChunkPlan]:
    """Everything the generator needs per chunk, as pocket-tts 4.0.1 computes it.

    Each chunk from `split_into_chunks` is prepared once more (as the
    reference does before tokenizing it), and its EOS tail is, in order of
    preference: `frames_after_eos`, the config's recommendation, or the
    prepared chunk's own guess plus 2. `frame_rate` is the config's
    `mimi.frame_rate`.
    """
    rules = rules if rules is not None else TextRules()
    if frames_after_eos is None:
        frames_after_eos = rules.model_recommended_frames_after_eos

    plans: list[ChunkPlan] = []
    for chunk in split_into_chunks(tokenizer, text, rules, max_tokens):
        prepared = prepare_text(chunk, rules)
        token_ids = tuple(tokenizer.encode(prepared.text))
        tail = (
            frames_after_eos
            if frames_after_eos is not None
            else prepared.frames_after_eos_guess + _EOS_TAIL_BONUS
        )
        plans.append(
            ChunkPlan(
                text=prepared.text,
                token_ids=token_ids,
                max_frames=max_generation_frames(len(token_ids), frame_rate),
                frames_after_eos=tail,
            )
        )
    return plans
