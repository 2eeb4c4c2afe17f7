"""Word timings from the FlowLM's own attention (issue 35; pocket-tts-timestamped's method).

``WordTimer`` follows a stream's frames (each carrying its word heads' attention over its
chunk's text) and says which words they end, with their times in seconds from the start of
the audio. ``units`` cuts the text into units, ``align`` applies the per-frame rule.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from typing import Protocol

import numpy as np

from pocketcli.errors import WordsUnavailable as WordsUnavailable  # re-exported
from pocketcli.words.align import ChunkAligner, Word, is_voiced, unit_scores
from pocketcli.words.units import ChunkUnits, UnitMaker, whole_characters

__all__ = ["TimedAudio", "UnitMaker", "Word", "WordTimer", "WordsUnavailable", "chunk_units"]


class TimedAudio(np.ndarray):
    """An utterance's samples (a float32 array like any other) and its timed ``words``."""

    words: tuple[Word, ...]

    @classmethod
    def of(cls, audio: np.ndarray, words: list[Word]) -> TimedAudio:
        timed = np.asarray(audio).view(cls)
        timed.words = tuple(words)
        return timed

    def __array_finalize__(self, obj: object) -> None:
        self.words = getattr(obj, "words", ())


class _Pieces(Protocol):
    def pieces(self, text: str) -> tuple[list[int], list[tuple[int, int]], list[str], str]: ...


def chunk_units(
    maker: UnitMaker, chunk: str, tokenizer: _Pieces, n_tokens: int | None = None
) -> ChunkUnits:
    """The next chunk's units and token map, on its prepared text in NFKC as the fork maps
    it; on the text as spoken when NFKC would change its ``n_tokens`` tokens (the model
    attended to those)."""
    text = unicodedata.normalize("NFKC", chunk)
    _ids, offsets, pieces, coordinates = tokenizer.pieces(text)
    if n_tokens is not None and len(offsets) != n_tokens:
        text = chunk
        _ids, offsets, pieces, coordinates = tokenizer.pieces(text)
    return maker.units(text, whole_characters(offsets, pieces), coordinates)


class WordTimer:
    """Words as a stream's frames decide them.

    ``feed`` each frame in order (pause frames too: they move time on); it returns the
    words that frame ends. ``end`` after the last frame returns the rest. A chunk's frames
    carry ``attention`` (its word heads' logits over the chunk's text tokens);
    ``units_of(chunk_index)`` gives a chunk's units when its first frame comes.
    """

    def __init__(
        self, units_of: Callable[[int], ChunkUnits], sample_rate: int, speed: float = 1.0
    ) -> None:
        self.units_of = units_of
        # Samples of the model's audio per second of the audio heard: at ``speed`` (a
        # stream time-stretched after the words are decided) a second holds speed x more.
        self.rate = sample_rate * speed
        self.offset = 0.0  # seconds where the current chunk (or pause) began
        self.samples = 0  # samples of the current chunk so far
        self.current: int | None = None
        self.chunk: ChunkUnits | None = None
        self.aligner: ChunkAligner | None = None
        self.scores: list[np.ndarray] = []  # per frame of speech (for tests and reports)

    def _close_chunk(self) -> list[Word]:
        end = self.offset + self.samples / self.rate
        ended = self.aligner.finish(end) if self.aligner is not None else []
        self.offset, self.samples, self.aligner, self.current = end, 0, None, None
        return ended

    def feed(self, chunk_index: int, audio: np.ndarray, attention: np.ndarray | None) -> list[Word]:
        """The words ended by this frame (``chunk_index`` -1: a pause)."""
        ended: list[Word] = []
        if chunk_index != self.current or chunk_index < 0:
            if chunk_index >= 0 or self.aligner is not None:
                ended = self._close_chunk()
            self.current = chunk_index
            if chunk_index >= 0:
                self.chunk = self.units_of(chunk_index)
                self.aligner = ChunkAligner(self.chunk)
        at = self.offset + self.samples / self.rate
        self.samples += audio.size
        if self.aligner is None or self.chunk is None:
            return ended
        if attention is None:
            raise WordsUnavailable("cannot time words: a frame came without its attention")
        scores = unit_scores(attention, self.chunk.token_to_unit)
        self.scores.append(scores)
        return ended + self.aligner.frame(scores, is_voiced(audio), at)

    def end(self) -> list[Word]:
        """The words the end of the audio ends."""
        return self._close_chunk()
