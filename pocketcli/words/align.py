"""Which word each frame speaks, from the word heads' attention (pocket-tts-timestamped's rule).

Per frame: the heads' attention over the chunk's text (a softmax over the text positions
only), shared out to units (``units.ChunkUnits.token_to_unit``) and averaged over the
heads. A voiced frame (RMS above 1e-3) opens the next word when none is open; an open
word ends, and the next one starts, when the next word's score passes its own (or, once
its own score is below 0.001, any later word's does). A silent frame ends the open word
when a later unit has passed it, or when it is the chunk's last word and no punctuation of
the user's follows it. The chunk's end ends an open word; words never opened are passed
over (not timed).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pocketcli.words.units import ChunkUnits, SourceWord

SILENCE_RMS = float(np.float32(1e-3))
LOW_ATTENTION = 0.001


@dataclass(frozen=True)
class Word:
    """A word of the user's text and when it is heard, in seconds from the audio's start."""

    word: str
    start: float
    end: float
    index: int  # its place among the text's words (a word passed over leaves a gap)

    def as_dict(self) -> dict[str, object]:
        return {"word": self.word, "start": self.start, "end": self.end}


def is_voiced(audio: np.ndarray) -> bool:
    samples = np.asarray(audio, np.float32).reshape(-1)
    if samples.size == 0:
        return False
    return float(np.dot(samples, samples)) > SILENCE_RMS**2 * samples.size


def unit_scores(text_logits: np.ndarray, token_to_unit: np.ndarray) -> np.ndarray:
    """``[heads, tokens]`` scaled logits -> ``[units]``: each head's softmax over the text,
    shared out to units, averaged over the heads."""
    logits = np.asarray(text_logits, np.float32)
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    attention = e / e.sum(axis=-1, keepdims=True)
    return (attention @ token_to_unit).sum(axis=0) / logits.shape[0]


class ChunkAligner:
    """The rule above over one chunk's frames."""

    def __init__(self, chunk: ChunkUnits) -> None:
        self.units = chunk.units
        self.words = chunk.word_units  # unit indices of the words, in order
        self.next = 0  # position in ``words`` of the next word to open
        self.open: int | None = None  # position in ``words`` of the open word
        self.start = 0.0

    def _word(self, position: int) -> SourceWord:
        word = self.units[self.words[position]].word
        assert word is not None
        return word

    def _open_next(self, at: float) -> None:
        self.open, self.start = self.next, at
        self.next += 1

    def _close(self, at: float) -> Word:
        assert self.open is not None
        word = self._word(self.open)
        self.open = None
        return Word(word.text, self.start, at, word.index)

    def _passed(self, scores: np.ndarray, unit: int) -> bool:
        own = float(scores[unit])
        if float(scores[self.words[self.next]]) > own:
            return True
        if own >= LOW_ATTENTION:
            return False
        return any(float(scores[u]) > own for u in self.words[self.next + 1 :])

    def _silent(self, scores: np.ndarray, at: float) -> list[Word]:
        if self.open is None:
            return []
        unit = self.words[self.open]
        later = scores[unit + 1 :]
        overtaken = later.size > 0 and float(later.max()) > float(scores[unit])
        last = self.open == len(self.words) - 1
        punctuated = any(u.word is None and not u.added for u in self.units[unit + 1 :])
        return [self._close(at)] if overtaken or (last and not punctuated) else []

    def frame(self, scores: np.ndarray, voiced: bool, at: float) -> list[Word]:
        """The words this frame (starting at ``at`` seconds) ends."""
        if len(scores) != len(self.units):
            raise ValueError(f"{len(self.units)} unit scores expected, not {len(scores)}")
        if not voiced:
            return self._silent(scores, at)
        if self.open is None:
            if self.next < len(self.words):
                self._open_next(at)
            return []
        if self.next >= len(self.words) or not self._passed(scores, self.words[self.open]):
            return []
        ended = self._close(at)
        self._open_next(at)
        return [ended]

    def finish(self, at: float) -> list[Word]:
        """The chunk's audio ends at ``at``: its open word ends there."""
        ended = [self._close(at)] if self.open is not None else []
        self.next = len(self.words)
        return ended
