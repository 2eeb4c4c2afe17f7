"""Live speech: FluidAudio's session (``makeSession``, section 8.2 of its spec) in Python.

    with tts.session(voice, SpeakOptions(seed=1)) as session:
        session.enqueue("Hello.")          # from any thread, while frames are read
        session.enqueue("How are you?")
        session.finish()                   # no more text: the frames end after these
        for frame in session:              # or: async for frame in session
            play(frame.audio)

A session is one stream of the model's scheduler (``pocketcli.engine.scheduler``),
fed by its texts as they are enqueued: each text goes through the same normaliser,
markup and chunking as ``tts`` (``PocketTTS.script``, run by ``enqueue`` so a bad
text is the caller's error), every chunk starts from a copy of the voice's KV
snapshot, and one noise generator, seeded once, runs across chunks and texts. So
one enqueued text gives exactly the frames of ``PocketTTS.stream`` with the same
seed, and a session of several texts is reproducible. Several sessions of one
loaded model speak at the same time, each a row of the same batched calls.

Bounded: at most ``MAX_AHEAD_FRAMES`` frames (about 2.5 s) are made ahead of the
reader, pauses included (a reader that does not read stops generation), and at most
``MAX_QUEUED_TEXTS`` texts wait to be spoken (``enqueue`` raises ``SessionFull``
beyond). The session owns no thread: a session dropped without ``cancel`` is
cancelled when it is garbage-collected.

``cancel()`` stops generation at the scheduler's next tick and drops the frames not
yet read. An error ends the stream: iteration raises it after the frames made
before it.
"""

from __future__ import annotations

import asyncio
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from pocketcli.audio.stretch import Stretcher
from pocketcli.engine.chunk import Frame, HeldWords
from pocketcli.engine.noise import NoiseSource, peekable
from pocketcli.engine.scheduler import Mark, StreamHandle
from pocketcli.errors import SessionClosed as SessionClosed  # defined there; re-exported
from pocketcli.errors import SessionFull as SessionFull  # defined there; re-exported
from pocketcli.normalize.timeline import Pause
from pocketcli.options import SpeakOptions
from pocketcli.text import ChunkPlan
from pocketcli.voices.state import VoiceState

if TYPE_CHECKING:
    from pocketcli.audio.playback import AudioSink
    from pocketcli.audio.postprocess import OutputChain
    from pocketcli.runtimes.base import Runtime
    from pocketcli.words.source import SpokenParts
    from pocketcli.words.stream import SessionWords

# Texts enqueued and not yet spoken to their end before ``enqueue`` refuses more.
MAX_QUEUED_TEXTS = 64


class SessionModel(Protocol):
    """What a session needs of a loaded model (``PocketTTS.session`` hands one over)."""

    runtime: Runtime

    def script(
        self,
        text: str,
        opts: SpeakOptions,
        on_warning: Callable[[str], None] | None,
        record: SpokenParts | None = None,
    ) -> list[ChunkPlan | Pause]: ...

    def submit(
        self,
        items: Iterable[ChunkPlan | Pause | Mark],
        voice: VoiceState | None,
        opts: SpeakOptions,
        noise: NoiseSource,
        ready: Callable[[], bool],
    ) -> StreamHandle:
        """A stream of the model's scheduler over ``items`` (``ready``: an item is there)."""
        ...

    def output_chain(self, opts: SpeakOptions) -> OutputChain | None: ...

    def noise(self, opts: SpeakOptions) -> NoiseSource: ...

    def words(self, opts: SpeakOptions) -> SessionWords:
        """The words stage of a session that asks for them (``WordsUnavailable``: cannot)."""
        ...


@dataclass(frozen=True)
class SessionFrame(Frame):
    """A frame (see ``Frame``) and where it belongs: FluidAudio's ``AudioFrame``."""

    chunk_count: int  # chunks (not pauses) of this utterance
    utterance_index: int  # which enqueued text, from 0


@dataclass(frozen=True)
class UtteranceEnd:
    """In ``Session.events()``: every frame of utterance ``index`` has been read."""

    index: int


def _stretcher(options: SpeakOptions) -> Stretcher | None:
    """A text's own time-stretcher (None at 1.0: the samples stay the model's)."""
    return None if options.speed == 1.0 else Stretcher(options.speed)


class _Texts:
    """A session's texts as the items of its stream: each text's script, then a mark
    of its end. Never blocks: the scheduler asks ``ready`` first."""

    def __init__(self) -> None:
        self._items: deque[ChunkPlan | Pause | Mark] = deque()
        self._lock = threading.Lock()
        self._finished = False
        self.waiting = 0  # texts whose end mark the stream has not yet taken

    def put(self, index: int, chunks: list[ChunkPlan | Pause]) -> bool:
        """Queues a text (False: ``MAX_QUEUED_TEXTS`` are already waiting)."""
        with self._lock:
            if self.waiting >= MAX_QUEUED_TEXTS:
                return False
            self.waiting += 1
            self._items.extend(chunks)
            self._items.append(Mark(UtteranceEnd(index)))
            return True

    def finish(self) -> None:
        with self._lock:
            self._finished = True

    def ready(self) -> bool:
        with self._lock:
            return bool(self._items) or self._finished

    def __iter__(self) -> Iterator[ChunkPlan | Pause | Mark]:
        return self

    def __next__(self) -> ChunkPlan | Pause | Mark:
        with self._lock:
            if not self._items:
                raise StopIteration
            item = self._items.popleft()
            if isinstance(item, Mark):
                self.waiting -= 1
            return item


class Session:
    """A voice, options and one noise generator, speaking texts as they are enqueued.

    Made by ``PocketTTS.session``. One reader iterates the frames (``for`` or
    ``async for``); any thread may ``enqueue``, ``finish`` or ``cancel``.
    """

    def __init__(
        self,
        tts: SessionModel,
        voice: VoiceState | None,
        options: SpeakOptions,
        *,
        noise: NoiseSource | None = None,
        on_warning: Callable[[str], None] | None = None,
    ) -> None:
        self.options = options
        self._tts = tts
        self._on_warning = on_warning
        self._texts = _Texts()
        self._state = threading.Lock()
        self._closed = False
        self._enqueued = 0
        self._counts: dict[int, int] = {}  # chunks of each text not yet read to its end
        self._completed = -1  # the last utterance all of whose frames were read
        self._ended = False  # the reader saw the end of the stream
        self._chain = tts.output_chain(options)
        self._words = tts.words(options) if options.words else None
        self._stretcher = _stretcher(options)
        self._last: Frame | None = None  # the last frame given to the stretcher
        self._held: UtteranceEnd | None = None  # an end waiting behind its text's tail
        self._held_words = HeldWords()  # of frames the stretcher held all of
        # One lookahead for every text: the noise sequence runs on across them.
        noise = peekable(noise or tts.noise(options))
        self._handle = tts.submit(self._texts, voice, options, noise, self._texts.ready)
        # Dropped without a cancel: its stream leaves the scheduler all the same.
        weakref.finalize(self, self._handle.cancel)

    # -- the producer's side -------------------------------------------------
    def enqueue(self, text: str) -> int | None:
        """Queues a text; returns its utterance index (None for blank text, skipped).

        Raises ``SessionClosed`` after ``finish``/``cancel``/an error, ``SessionFull``
        while ``MAX_QUEUED_TEXTS`` texts wait, and the text's own errors
        (``MarkupError``, ``EmptyTextError``) here, not in the stream.
        """
        self._check_open()
        if not text.strip():
            return None  # a stream's blank piece is nothing to say (synthesize("") raises)
        record = self._words.record() if self._words is not None else None
        chunks = self._tts.script(text, self.options, self._on_warning, record)
        with self._state:
            self._check_open()
            index = self._enqueued
            if self._words is not None:
                self._words.add(index, text, chunks, record)
            if not self._texts.put(index, chunks):
                raise SessionFull(
                    f"the session has {MAX_QUEUED_TEXTS} texts waiting to be spoken;"
                    " read its frames before enqueueing more"
                )
            self._counts[index] = sum(1 for item in chunks if not isinstance(item, Pause))
            self._enqueued += 1
        self._handle.wake()
        return index

    def _check_open(self) -> None:
        if self._handle.cancelled:
            raise SessionClosed("the session was cancelled; start a new one")
        if self._closed or self._handle.failed:
            raise SessionClosed("the session is finished; start a new one")

    def finish(self) -> None:
        """No more text: the frames end once everything enqueued has been spoken."""
        with self._state:
            self._closed = True
            self._texts.finish()
        self._handle.wake()

    def cancel(self, wait: bool = True, timeout: float | None = None) -> bool:
        """Stops generation at the next tick and ends the frames now.

        With ``wait`` (the default) it returns once the stream has left the ticks (or
        ``timeout`` seconds have passed); returns whether it has.
        """
        with self._state:
            self._closed = True
        return self._handle.cancel(wait=wait, timeout=timeout)

    async def acancel(self) -> None:
        """``cancel()`` without blocking the event loop."""
        await asyncio.to_thread(self.cancel)

    @property
    def enqueued(self) -> int:
        """How many texts have been accepted (the next utterance index)."""
        return self._enqueued

    @property
    def cancelled(self) -> bool:
        return self._handle.cancelled

    # -- the reader's side ---------------------------------------------------
    def __iter__(self) -> Iterator[SessionFrame]:
        return self

    def __next__(self) -> SessionFrame:
        while True:
            item = self._next_item()
            if item is None:
                raise StopIteration
            if isinstance(item, SessionFrame):
                return item

    def events(self) -> Iterator[SessionFrame | UtteranceEnd]:
        """The frames, with an ``UtteranceEnd`` after each text's last frame."""
        while (item := self._next_item()) is not None:
            yield item

    def until_idle(self) -> Iterator[SessionFrame]:
        """The frames of every text enqueued so far; returns when they are all read
        (the session stays open for more text)."""
        target = self._enqueued - 1
        while self._completed < target:
            item = self._next_item()
            if item is None:
                return
            if isinstance(item, SessionFrame):
                yield item

    def _next_item(self) -> SessionFrame | UtteranceEnd | None:
        """The next frame or end-of-utterance mark; None at the end of the stream."""
        if self._held is not None:
            held, self._held = self._held, None
            return held
        while (item := self._next_raw()) is not None:
            if isinstance(item, SessionFrame):
                item = self._held_words.pass_on(item)  # None: the stretcher held all of it
            if item is not None:
                return item
        return None

    def _next_raw(self) -> SessionFrame | UtteranceEnd | None:
        if self._ended:
            return None
        try:
            pull = self._handle.next_item
            item = pull() if self._words is None else self._words.next(pull)
        except BaseException:
            self._ended = self._closed = True
            raise
        if item is None:
            self._ended = True
            return None
        if isinstance(item, Mark):
            assert isinstance(item.value, UtteranceEnd)
            self._completed = item.value.index
            tail = self._tail(self._counts.pop(item.value.index, 0))
            self._chain = self._tts.output_chain(self.options)  # each text's own
            if tail is None:
                return item.value
            self._held = item.value
            return tail
        index = self._completed + 1
        audio = item.audio
        if self._stretcher is not None:
            self._last = item
            audio = self._stretcher.process(audio)
        if self._chain is not None:
            audio = self._chain.process(audio)
        return SessionFrame(
            audio, item.chunk_index, item.frame_index, item.latent, item.eos_logit,
            self._counts.get(index, 0), index, attention=item.attention, words=item.words,
        )  # fmt: skip

    def _tail(self, chunk_count: int) -> SessionFrame | None:
        """The stretched end of the text just finished (each text has its own stretcher)."""
        if self._stretcher is None:
            return None
        audio = self._stretcher.flush()
        self._stretcher = _stretcher(self.options)
        last = self._last
        if not len(audio) or last is None:
            return None
        if self._chain is not None:
            audio = self._chain.process(audio)
        self._last = None
        return SessionFrame(
            audio, last.chunk_index, last.frame_index, last.latent, last.eos_logit,
            chunk_count, self._completed,
        )  # fmt: skip

    def __aiter__(self) -> Session:
        return self

    async def __anext__(self) -> SessionFrame:
        try:
            frame = await asyncio.to_thread(self._next_frame_or_none)
        except asyncio.CancelledError:
            self.cancel(wait=False)  # the reader went away: so does the generation
            raise
        if frame is None:
            raise StopAsyncIteration
        return frame

    def _next_frame_or_none(self) -> SessionFrame | None:
        return next(self, None)

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.cancel()

    async def __aenter__(self) -> Session:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.acancel()


def play_session(
    session: Session,
    sinks: list[AudioSink],
    *,
    record: list[np.ndarray] | None = None,
    on_words: Callable[[tuple], None] | None = None,
) -> dict[str, float]:
    """Moves a session's frames to ``sinks`` as they come, until its stream ends.

    ``record`` collects the frames too; ``on_words`` is given each frame's words (a
    session with ``words``), after its audio went to the sinks. Each sink is flushed when
    the session has spoken everything enqueued so far. Returns the seconds to
    the first frame and in all, and the samples.
    """
    start = time.perf_counter()
    first: float | None = None
    samples = 0
    for event in session.events():
        if isinstance(event, UtteranceEnd):
            if event.index == session.enqueued - 1:  # caught up with the text so far
                for sink in sinks:
                    sink.flush()
            continue
        if first is None:
            first = time.perf_counter() - start
        for sink in sinks:
            sink.write(event.audio)
        if record is not None:
            record.append(event.audio)
        if on_words is not None and event.words:
            on_words(event.words)
        samples += event.audio.size
    total = time.perf_counter() - start
    return {"first_audio": first or 0.0, "synthesis": total, "audio": float(samples)}
