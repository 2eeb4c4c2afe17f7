"""Word events in a stream of frames: each frame carries the words it ends (``Frame.words``)."""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from pocketcli.text import ChunkPlan
from pocketcli.words import UnitMaker, WordTimer, chunk_units
from pocketcli.words.source import SpokenParts, UserWords
from pocketcli.words.units import ChunkUnits

# A frame (``engine.chunk.Frame``): a dataclass with chunk_index, audio, attention, words.
F = TypeVar("F")


class ScriptWatch:
    """The chunks of a script as the engine takes them (a pass-through of the iterator),
    so the words stage can cut each chunk's text into units when its first frame comes.

    ``source``: the user's text when it was spoken as given (its words are the captions'),
    None when each chunk's own text is its source (normalised text)."""

    def __init__(
        self,
        items: Iterable[object],
        tokenizer: object,
        source: str | None,
        parts: SpokenParts | None = None,
    ) -> None:
        self._items = iter(items)
        self.tokenizer = tokenizer
        self.plans: list[ChunkPlan] = []
        self.maker = UnitMaker(source or "")
        self.given = source is not None
        self.parts = parts  # a normalised script's pieces: each one's spoken text its source

    def __iter__(self) -> Iterator[object]:
        for item in self._items:
            if isinstance(item, ChunkPlan):
                self.plans.append(item)
            yield item

    def units_of(self, chunk_index: int) -> ChunkUnits:
        plan = self.plans[chunk_index]
        if self.parts is not None:
            spoken = self.parts.spoken_text(chunk_index, len(self.maker.words))
            if spoken is not None:
                self.maker.extend(spoken)
        elif not self.given:
            self.maker.extend(plan.text)
        return chunk_units(self.maker, plan.text, self.tokenizer, len(plan.token_ids))  # type: ignore[arg-type]


def timed(frames: Iterator[F], timer: WordTimer) -> Iterator[F]:
    """``frames`` with the words each ends; held back one frame, so the words the end of a
    chunk decides ride on its last frame."""
    held: F | None = None
    try:
        for frame in frames:
            ended = timer.feed(frame.chunk_index, frame.audio, frame.attention)
            if held is not None:
                yield dataclasses.replace(held, words=held.words + tuple(ended))
                ended = []
            held = dataclasses.replace(frame, words=tuple(ended))
        if held is not None:
            yield dataclasses.replace(held, words=held.words + tuple(timer.end()))
    finally:
        close = getattr(frames, "close", None)
        if close is not None:
            close()


class SessionWords:
    """Word timings of a live session: each text's chunks as it is enqueued, each frame
    of the session's stream as it comes (held back one frame, as ``timed``), times from
    the start of the session's audio. Marks (a text's end) end its words."""

    def __init__(
        self,
        tokenizer: object,
        sample_rate: int,
        given: bool,
        speed: float = 1.0,
        parts: Callable[[], SpokenParts] | None = None,
    ) -> None:
        self.tokenizer = tokenizer
        self.given = given  # the texts are spoken as given (not normalised): their words
        self.texts: dict[int, tuple[str, list[ChunkPlan], SpokenParts | None]] = {}
        self.utterance = 0
        self.maker: UnitMaker | None = None
        self.timer = WordTimer(self._units_of, sample_rate, speed)
        # A normalised text's words said as the user wrote them (``source.UserWords``).
        self.words = UserWords(self.timer, None)
        self._parts = parts
        self.held: object | None = None
        self.queue: deque[object] = deque()

    def record(self) -> SpokenParts | None:
        """What the next text's script records of its pieces (None: spoken as given)."""
        return None if self.given or self._parts is None else self._parts()

    def add(
        self, index: int, text: str, items: Iterable[object], record: SpokenParts | None = None
    ) -> None:
        plans = [item for item in items if isinstance(item, ChunkPlan)]
        self.texts[index] = (text, plans, record)

    def _units_of(self, chunk_index: int) -> ChunkUnits:
        text, plans, record = self.texts[self.utterance]
        if chunk_index == 0 or self.maker is None:
            self.maker = UnitMaker(text if self.given else "")
            self.words.parts = record
        plan = plans[chunk_index]
        if record is not None:
            spoken = record.spoken_text(chunk_index, len(self.maker.words))
            if spoken is not None:
                self.maker.extend(spoken)
        elif not self.given:
            self.maker.extend(plan.text)
        return chunk_units(self.maker, plan.text, self.tokenizer, len(plan.token_ids))  # type: ignore[arg-type]

    def next(self, pull: Callable[[], object | None]) -> object | None:
        """The next frame (with its words), mark or None, pulling the stream's items."""
        if self.queue:
            return self.queue.popleft()
        while True:
            item = pull()
            if item is not None and hasattr(item, "attention"):
                ended = tuple(self.words.feed(item.chunk_index, item.audio, item.attention))  # type: ignore[attr-defined]
                held, self.held = self.held, dataclasses.replace(item, words=())
                if held is not None:
                    return dataclasses.replace(held, words=held.words + ended)  # type: ignore[attr-defined]
                self.held = dataclasses.replace(item, words=ended)
                continue
            out: list[object] = []
            if self.held is not None:
                last = self.words.end()
                out.append(dataclasses.replace(self.held, words=self.held.words + tuple(last)))  # type: ignore[attr-defined]
                self.held = None
            if item is not None:  # a text's end (``timer.end`` above ended its last chunk)
                self.texts.pop(self.utterance, None)
                self.utterance += 1
            out.append(item)
            self.queue.extend(out[1:])
            return out[0]
