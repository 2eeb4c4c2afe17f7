"""Word events in a stream of frames: each frame carries the words it ends (``Frame.words``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator

from pocketcli.engine.chunk import Frame
from pocketcli.text import ChunkPlan
from pocketcli.words import UnitMaker, WordTimer, chunk_units
from pocketcli.words.units import ChunkUnits


class ScriptWatch:
    """The chunks of a script as the engine takes them (a pass-through of the iterator),
    so the words stage can cut each chunk's text into units when its first frame comes.

    ``source``: the user's text when it was spoken as given (its words are the captions'),
    None when each chunk's own text is its source (normalised text)."""

    def __init__(self, items: Iterable[object], tokenizer: object, source: str | None) -> None:
        self._items = iter(items)
        self.tokenizer = tokenizer
        self.plans: list[ChunkPlan] = []
        self.maker = UnitMaker(source or "")
        self.given = source is not None

    def __iter__(self) -> Iterator[object]:
        for item in self._items:
            if isinstance(item, ChunkPlan):
                self.plans.append(item)
            yield item

    def units_of(self, chunk_index: int) -> ChunkUnits:
        plan = self.plans[chunk_index]
        if not self.given:
            self.maker.extend(plan.text)
        return chunk_units(self.maker, plan.text, self.tokenizer, len(plan.token_ids))  # type: ignore[arg-type]


def timed(frames: Iterator[Frame], timer: WordTimer) -> Iterator[Frame]:
    """``frames`` with the words each ends; held back one frame, so the words the end of a
    chunk decides ride on its last frame."""
    held: Frame | None = None
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
