"""Live speech: FluidAudio's session (``makeSession``, section 8.2 of its spec) in Python.

    with tts.session(voice, SpeakOptions(seed=1)) as session:
        session.enqueue("Hello.")          # from any thread, while frames are read
        session.enqueue("How are you?")
        session.finish()                   # no more text: the frames end after these
        for frame in session:              # or: async for frame in session
            play(frame.audio)

A session owns a background thread that speaks each enqueued text in turn:
the text goes through the same normaliser, markup and chunking as ``tts``
(``PocketTTS.script``, run by ``enqueue`` so a bad text is the caller's
error), every chunk starts from a copy of the voice's KV snapshot, and one
noise generator, seeded once, runs across chunks and texts. So one enqueued
text gives exactly the frames of ``PocketTTS.stream`` with the same seed,
and a session of several texts is reproducible.

``cancel()`` stops generation before the next frame (the noise source checks
for it before every frame's flow head), waits for the runtime to be free and
drops the frames not yet read. An error ends the stream: iteration raises it
after the frames made before it. Texts are spoken by the model's scheduler
(``pocketcli.engine.scheduler``), so several sessions of one loaded model
speak at the same time, each a row of the same batched calls.
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from pocketcli.engine.generator import Frame
from pocketcli.engine.noise import NoiseSource
from pocketcli.errors import SessionClosed as SessionClosed  # defined there; re-exported
from pocketcli.normalize.timeline import Pause
from pocketcli.options import SpeakOptions
from pocketcli.text import ChunkPlan
from pocketcli.voices.state import VoiceState

if TYPE_CHECKING:
    from pocketcli.audio.playback import AudioSink
    from pocketcli.runtimes.base import Runtime


class SessionModel(Protocol):
    """What a session needs of a loaded model (``PocketTTS.session`` hands one over)."""

    runtime: Runtime

    def script(
        self, text: str, opts: SpeakOptions, on_warning: Callable[[str], None] | None
    ) -> list[ChunkPlan | Pause]: ...

    def frames(
        self,
        chunks: Iterable[ChunkPlan | Pause],
        voice: VoiceState | None,
        opts: SpeakOptions,
        noise: NoiseSource,
    ) -> Iterator[Frame]:
        """The frames of a script, spoken by the model's scheduler beside other streams."""
        ...

    def noise(self, opts: SpeakOptions) -> NoiseSource: ...


@dataclass(frozen=True)
class SessionFrame(Frame):
    """A frame (see ``Frame``) and where it belongs: FluidAudio's ``AudioFrame``."""

    chunk_count: int  # chunks (not pauses) of this utterance
    utterance_index: int  # which enqueued text, from 0


class _Cancelled(Exception):
    """Unwinds the generation thread (and the engine's generator) on ``cancel``."""


class _StopOnCancel:
    """The session's noise: checks for a cancel before each frame's flow head."""

    def __init__(self, noise: NoiseSource, cancelled: threading.Event) -> None:
        self._noise = noise
        self._cancelled = cancelled

    def __call__(self, size: int) -> np.ndarray:
        if self._cancelled.is_set():
            raise _Cancelled()
        return self._noise(size)


@dataclass(frozen=True)
class UtteranceEnd:
    """In ``Session.events()``: every frame of utterance ``index`` has been read."""

    index: int


@dataclass(frozen=True)
class _Failure:
    error: BaseException


_END = object()  # input: no more text; output: no more frames


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
        self._voice = voice
        self._on_warning = on_warning
        self._cancelled = threading.Event()
        self._noise = _StopOnCancel(noise or tts.noise(options), self._cancelled)
        self._input: queue.Queue[Any] = queue.Queue()
        self._output: queue.Queue[Any] = queue.Queue()
        self._state = threading.Lock()
        self._closed = False
        self._enqueued = 0
        self._completed = -1  # the last utterance all of whose frames were read
        self._ended = False  # the reader saw the end of the stream
        self._thread = threading.Thread(target=self._run, name="pockettts-session", daemon=True)
        self._thread.start()

    # -- the producer's side -------------------------------------------------
    def enqueue(self, text: str) -> int | None:
        """Queues a text; returns its utterance index (None for blank text, skipped).

        Raises ``SessionClosed`` after ``finish``/``cancel``, and the text's own
        errors (``MarkupError``, ``EmptyTextError``) here, not in the stream.
        """
        if self._closed:
            raise SessionClosed(self._closed_reason())
        if not text.strip():
            return None  # a stream's blank piece is nothing to say (synthesize("") raises)
        chunks = self._tts.script(text, self.options, self._on_warning)
        with self._state:
            if self._closed:
                raise SessionClosed(self._closed_reason())
            index = self._enqueued
            self._enqueued += 1
            self._input.put((index, chunks))
        return index

    def _closed_reason(self) -> str:
        if self._cancelled.is_set():
            return "the session was cancelled; start a new one"
        return "the session is finished; start a new one"

    def finish(self) -> None:
        """No more text: the frames end once everything enqueued has been spoken."""
        with self._state:
            if not self._closed:
                self._closed = True
                self._input.put(_END)

    def cancel(self, wait: bool = True) -> None:
        """Stops generation before its next frame and ends the frames now.

        With ``wait`` (the default) it returns once the model is free again.
        """
        with self._state:
            self._closed = True
            self._cancelled.set()
            self._input.put(_END)
        if wait and threading.current_thread() is not self._thread:
            self._thread.join()

    async def acancel(self) -> None:
        """``cancel()`` without blocking the event loop."""
        await asyncio.to_thread(self.cancel)

    @property
    def enqueued(self) -> int:
        """How many texts have been accepted (the next utterance index)."""
        return self._enqueued

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

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
        if self._ended or self._cancelled.is_set():
            self._ended = True
            return None
        item = self._output.get()
        if isinstance(item, UtteranceEnd):
            self._completed = item.index
            return item
        if isinstance(item, SessionFrame) and not self._cancelled.is_set():
            return item
        self._ended = True
        if isinstance(item, _Failure):
            raise item.error
        return None

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

    # -- the generation thread -------------------------------------------------
    def _run(self) -> None:
        try:
            # The voice snapshot is laid out for the runtime once, now, so the
            # first text pays only for itself (each chunk then copies it).
            self._tts.runtime.start_sequence(self._voice, 1)
            while not self._cancelled.is_set():
                item = self._input.get()
                if item is _END:
                    break
                index, chunks = item
                self._speak(index, chunks)
                self._output.put(UtteranceEnd(index))
        except _Cancelled:
            pass
        except BaseException as exc:  # the reader gets it, in order, after the frames
            with self._state:
                self._closed = True
            self._output.put(_Failure(exc))
            return
        self._output.put(_END)

    def _speak(self, index: int, chunks: list[ChunkPlan | Pause]) -> None:
        count = sum(1 for item in chunks if not isinstance(item, Pause))
        frames = self._tts.frames(chunks, self._voice, self.options, self._noise)
        try:
            for f in frames:
                self._output.put(
                    SessionFrame(
                        f.audio, f.chunk_index, f.frame_index, f.latent, f.eos_logit, count, index
                    )
                )
                if self._cancelled.is_set():
                    raise _Cancelled()
        finally:
            frames.close()  # a cancel leaves the scheduler at its next tick


def play_session(
    session: Session,
    sinks: list[AudioSink],
    *,
    record: list[np.ndarray] | None = None,
) -> dict[str, float]:
    """Moves a session's frames to ``sinks`` as they come, until its stream ends.

    ``record`` collects the frames too. Each sink is flushed when
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
        samples += event.audio.size
    total = time.perf_counter() - start
    return {"first_audio": first or 0.0, "synthesis": total, "audio": float(samples)}
