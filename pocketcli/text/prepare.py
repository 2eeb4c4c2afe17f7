"""Normalise one text prompt into the shape the model was trained on.

Pocket TTS was trained on single, capitalised sentences ending with a
sentence mark. Text that deviates (no final period, a lower-case start, a
trailing comma) tends to make the model mumble or repeat the last word, so
every prompt and every chunk goes through `prepare_text` before it is
tokenized. The steps and their order replicate pocket-tts 4.0.1 exactly,
including its quirks, because the token ids must match what the model saw.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pocketcli.errors import EmptyTextError as EmptyTextError  # defined there; re-exported
from pocketcli.text.rules import TextRules

__all__ = ["EmptyTextError", "PreparedText", "prepare_text"]

# Marks that already end a sentence (the ellipsis is the single character U+2026).
SENTENCE_ENDINGS = ".!?\u2026"
# Marks that only pause; left at the very end they are swapped for a period.
PAUSE_MARKS = ",;:-\u2013\u2014"
# Closing quotes and brackets that may follow the final mark.
CLOSING_MARKS = "\"'\u201d\u2019)]\u00bb"

# After quotes are deleted, '"Hi?", she said' reads 'Hi?, she said': a sentence
# mark directly followed by a pause mark. Only the sentence mark is kept.
_MARK_BEFORE_PAUSE = re.compile(r"([.!?\u2026])\s*[,;:]")

# Prompts of at most this many words get a longer tail after the end-of-speech
# signal: short utterances otherwise get their last sound clipped.
_SHORT_PROMPT_WORDS = 4
_PAD_BELOW_WORDS = 5
_PADDING = " " * 8


@dataclass(frozen=True, slots=True)
class PreparedText:
    """A prompt ready for the tokenizer, with the model's suggested EOS tail.

    `frames_after_eos_guess` is the raw heuristic (3 for short prompts, else
    1); the generator adds 2 to it when no explicit value is configured.
    """

    text: str
    frames_after_eos_guess: int


def _apply_replacements(text: str, rules: TextRules) -> str:
    """Rewrite configured characters, then tidy the whitespace and punctuation they leave."""
    rewritten = text.translate(str.maketrans(rules.replacements))
    rewritten = " ".join(rewritten.split())
    return _MARK_BEFORE_PAUSE.sub(r"\1", rewritten)


def _end_with_sentence_mark(text: str) -> str:
    """Make the prompt end like a training sentence.

    Closing quotes/brackets are looked through: 'He said "hi!"' is already
    fine. A dangling pause mark (comma, colon, dash...) becomes a period placed
    before the closers. Otherwise a period is added after everything,
    closers included, since the chunker only recognises a period token that
    is not followed by a lone quote.
    """
    body = text.rstrip(CLOSING_MARKS + " ")
    tail = text[len(body) :].strip()
    if not body or body[-1] in SENTENCE_ENDINGS:
        return text
    if body[-1] in PAUSE_MARKS:
        return body.rstrip(PAUSE_MARKS + " ") + "." + tail
    return text + "."


def prepare_text(text: str, rules: TextRules | None = None) -> PreparedText:
    """Normalise `text` for the model; raises `EmptyTextError` if nothing is left.

    Note the whitespace handling is deliberately shallow (line breaks become
    spaces and a single pass turns double spaces into one), as in the
    reference: a deeper clean-up would change the token ids.
    """
    rules = rules if rules is not None else TextRules()
    text = text.strip()
    if rules.replace_characters:
        text = _apply_replacements(text, rules)
    if not text:
        raise EmptyTextError("Text prompt cannot be empty")

    text = text.replace("\n", " ").replace("\r", " ").replace("  ", " ")
    if rules.remove_semicolons:
        text = text.replace(";", ",")

    word_count = len(text.split())
    guess = 3 if word_count <= _SHORT_PROMPT_WORDS else 1

    # Only scripts with letter case are affected; str.upper may lengthen the
    # character (e.g. "ß" -> "SS"), which is what the reference does too.
    if rules.capitalize_first_letter and not text[0].isupper():
        text = text[0].upper() + text[1:]

    if rules.append_terminal_punctuation:
        text = _end_with_sentence_mark(text)

    # Very short prompts have too few tokens for the model to behave; leading
    # spaces add (meaningless) tokens.
    if rules.pad_with_spaces_for_short_inputs and len(text.split()) < _PAD_BELOW_WORDS:
        text = _PADDING + text

    return PreparedText(text=text, frames_after_eos_guess=guess)
