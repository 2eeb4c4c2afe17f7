"""A spoken turn: text that arrives in pieces, spoken sentence by sentence as it completes.

The websocket (``/tts/ws``) and Wyoming's streaming synthesis both get text
as an LLM writes it. A ``SpokenTurn`` cuts it where ``split_ready`` says a
sentence is complete and enqueues each sentence in one live ``Session``
(``PocketTTS.session``: the same normaliser, chunking, voice and seeded noise
as every other front end), so the first sentence is heard while the rest is
still being written.

A turn is a stream like any other: it is a ``ModelJob`` of the front end's
admission (``frontends.admission``), so it waits in the one queue, is refused
``Busy`` past it, has a deadline, and holds a model slot only once admitted.
Its session is opened by the admission's worker when the turn's slot comes up
(text sent before that waits in the turn, a few sentences at most: the turn's
``max_chars``), and the worker reads its frames (no thread of the turn's own).
``cancel`` stops the session before its next frame, whether the worker waits
in it for text or for the reader.

Markup is never cut inside an element: with SSML on (``SpeakOptions.ssml``,
or a turn that starts with ``<speak>``) sentences are held until the elements
open in them close, so a ``<speak>`` document or an ``<emphasis>`` across a
sentence end is spoken whole, not dropped as malformed halves.

Text HTTP refuses is refused here too (the turn's error is a ``TurnError`` with
code ``invalid_text`` and HTTP's message): malformed markup, and a turn with
nothing to say at all. A sentence with nothing to say inside a turn that says
something is skipped with a warning.
"""

from __future__ import annotations

import re
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING

import numpy as np

from pocketcli import defaults
from pocketcli.frontends.admission import END, ERROR, Cancelled, JobRunner, ModelJob
from pocketcli.options import SpeakOptions
from pocketcli.text.sentences import split_ready

if TYPE_CHECKING:
    from pocketcli.frontends.backend import Backend
    from pocketcli.session import Session
    from pocketcli.voices.state import VoiceState


# Sentences a turn hands its session ahead of the one being spoken (a session takes 64).
IN_SESSION = 16


class TurnError(Exception):
    """What a client did wrong in a turn (``code`` for the protocol's error frame)."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.message, self.code = message, code


def describe_failure(exc: BaseException) -> tuple[str, str]:
    """A failure as one line and a code for a protocol's error event: the user's own
    mistakes as they are, anything else as an internal error (logged in full)."""
    from pocketcli.errors import UserError

    if isinstance(exc, TurnError):
        return exc.message, exc.code
    if isinstance(exc, UserError):  # any library error (markup, empty text, an option...)
        return str(exc), "invalid_request"
    from pocketcli.frontends import logs

    logs.logger().error("internal error", exc_info=exc)
    return f"internal error ({type(exc).__name__}); see the server's log", "internal"


def language_problem(ours: str | None, asked: object) -> str | None:
    """Why a request for language ``asked`` cannot be spoken by a model of language
    ``ours`` (a pack's language; None: english), or None when it can. ``asked`` may be
    a name or a code (``fr``, ``fr-FR``); one loaded model speaks one language."""
    if asked is None or (isinstance(asked, str) and not asked.strip()):
        return None
    from pocketcli.normalize.languages import LANGUAGES, resolve

    mine = resolve(ours or defaults.LANGUAGE)
    if not isinstance(asked, str):
        return f"language must be a string, not {asked!r}"
    wanted = asked.strip().lower().replace("_", "-").split("-")[0]
    if wanted in (mine.name, mine.code):
        return None
    known = next((lang.name for lang in LANGUAGES.values() if wanted == lang.code), wanted)
    return (
        f"this server speaks {mine.name}, not {asked[:40]!r}; start one with `--language {known}`"
    )


# An XML start, end or empty-element tag (not a comment, declaration or instruction).
_TAG = re.compile(r"""<(/?)[A-Za-z_][\w:.-]*(?:[^<>"']|"[^"]*"|'[^']*')*?(/?)>""")


def open_elements(text: str) -> int:
    """How many markup elements ``text`` leaves open (its start tags less its end tags)."""
    depth = 0
    for tag in _TAG.finditer(text):
        if tag[1]:
            depth -= 1
        elif not tag[2]:
            depth += 1
    return depth


class SpokenTurn:
    """``add(text)`` as pieces arrive, ``end()`` once; ``async for audio in turn.audio()``.

    Made admitted: the constructor submits the turn to ``runner`` (``Busy`` or
    ``ShuttingDown`` raise there, before any text is taken)."""

    def __init__(
        self,
        backend: Backend,
        voice: VoiceState | None,
        options: SpeakOptions,
        max_chars: int,
        runner: JobRunner,
        *,
        front: str,
        seconds: float,
    ) -> None:
        self.warnings: list[str] = []
        self.max_chars = max_chars
        self.seconds = seconds
        self.chars = 0
        self.samples = 0
        self._pending = ""
        self._held = ""  # complete sentences inside a markup element still open
        self._ssml = options.ssml
        self._backend, self._voice, self._options = backend, voice, options
        self._lock = threading.Lock()  # the text's side (event loop) and the worker's
        self._session: Session | None = None  # opened once the turn is admitted
        self._unsaid: deque[str] = deque()  # sentences not yet handed to the session
        self._in_session = 0  # sentences handed to it and not yet spoken out
        self._ended = False  # no more text (``end``)
        self._finished = False  # the session was told so
        self._spoken = 0  # sentences the session took
        self._nothing: str | None = None  # why a sentence had nothing to say, if one had
        self._refused: TurnError | None = None  # text HTTP would refuse: the turn's error
        self.job = ModelJob(self._frames, time.monotonic() + seconds, front=front)
        self.job.on_cancel(self._stop)
        runner.submit(self.job)

    # -- text in --------------------------------------------------------------
    def add(self, text: str) -> None:
        """Takes a piece of text; speaks whatever sentences it completes."""
        self.chars += len(text)
        if self.chars > self.max_chars:
            raise TurnError(
                f"text: {self.chars} characters in this turn, over the limit of {self.max_chars}",
                "text_too_long",
            )
        self._pending += text
        ready, self._pending = split_ready(self._pending)
        for sentence in ready:
            self._held = _joined(self._held, sentence)
            if not self._markup(self._held) or open_elements(self._held) <= 0:
                held, self._held = self._held, ""
                self._say(held)

    def end(self) -> None:
        """No more text in this turn: the rest is spoken, then the audio ends."""
        rest = _joined(self._held, self._pending)
        self._held = self._pending = ""
        self._say(rest)
        with self._lock:
            self._ended = True
            self._feed()

    def _markup(self, text: str) -> bool:
        """Whether ``text`` is read as SSML (as the normaliser decides it)."""
        if self._ssml is not None:
            return self._ssml
        return text.lstrip().startswith(("<speak", "<?xml"))

    def _say(self, text: str) -> None:
        with self._lock:
            if self._ended or self.job.cancelled:
                raise TurnError("this turn is over; start another", "turn_closed")
            self._unsaid.append(text)
            self._feed()

    def _feed(self) -> None:
        """Hands the session what it has room for (under the lock): a sentence each,
        at most ``IN_SESSION`` unspoken, then its end once the turn's text has ended."""
        from pocketcli.normalize import MarkupError
        from pocketcli.text import EmptyTextError

        session = self._session
        if session is None:
            return  # not admitted yet: the sentences wait here (``max_chars`` at most)
        while self._unsaid and self._in_session < IN_SESSION and self._refused is None:
            text = self._unsaid.popleft()
            if not text.strip():
                continue
            try:
                if session.enqueue(text) is not None:
                    self._in_session += 1
            except MarkupError as exc:  # malformed markup: refused, as HTTP refuses it
                self._refused = TurnError(str(exc), "invalid_text")
                session.cancel(wait=False)  # the worker raises it once the session stops
            except EmptyTextError as exc:  # this sentence only (a "###"): the rest goes on
                self._nothing = str(exc)
                self.warnings.append(f"skipped {' '.join(text.split())[:40]!r}: {exc}")
            else:
                self._spoken += 1
        if self._ended and not self._unsaid and not self._finished:
            if not self._spoken and self._nothing is not None and self._refused is None:
                # Nothing in the whole turn could be said: refused as HTTP refuses it.
                self._refused = TurnError(self._nothing, "invalid_text")
            self._finished = True
            session.finish()

    # -- the admission's worker ---------------------------------------------------
    def _frames(self) -> Iterator[np.ndarray]:
        """The turn's samples, read by the worker once the turn is admitted."""
        from pocketcli.frontends.backend import carried
        from pocketcli.session import UtteranceEnd

        tts = self._backend.tts
        session = tts.session(self._voice, self._options, on_warning=self.warnings.append)
        with self._lock:
            self._session = session
            self._feed()
        if self.job.cancelled:  # cancelled while the session opened
            session.cancel()
        try:
            for event in session.events():
                if isinstance(event, UtteranceEnd):  # room for the next sentence
                    with self._lock:
                        self._in_session -= 1
                        self._feed()
                    continue
                yield carried(event.audio, event.words)
        finally:
            session.cancel()  # returns once its thread is done: the slot is free after
        if self._refused is not None:
            raise self._refused

    def _stop(self, job: ModelJob) -> None:
        """The job's cancel (any thread): the session stops before its next frame."""
        with self._lock:
            session = self._session
        if session is not None:
            session.cancel(wait=False)  # the worker waits for it to be done

    # -- audio out --------------------------------------------------------------
    async def audio(self) -> AsyncIterator[np.ndarray]:
        """The turn's samples (float32, the model's rate) as they are made, each with the
        words it ends when the options ask for them (``backend.words_of``); raises the
        generation's error, if any, after the frames made before it (past the turn's
        deadline: a ``TurnError`` "timeout"); a cancelled turn just ends."""
        while True:
            kind, value = await self.job.next()
            if kind == END:
                return
            if kind == ERROR and not isinstance(value, Cancelled):
                raise value
            if self.job.cancelled:  # frames made before the cancel are dropped
                if self.job.cancel_reason == "deadline":
                    raise TurnError(
                        f"the turn was not done within the server's limit of {self.seconds:g} s",
                        "timeout",
                    )
                return
            self.samples += value.size
            yield value

    async def cancel(self, reason: str = "cancelled") -> None:
        """Stops the turn: waiting, it leaves the queue; speaking, the generation stops
        before its next frame (the admission's worker frees the slot once it has)."""
        self.job.cancel(reason)

    @property
    def cancelled(self) -> bool:
        return self.job.cancelled


def _joined(held: str, piece: str) -> str:
    """``piece`` after ``held``, on a line of its own where ``split_ready`` took the newline."""
    if not held:
        return piece
    return held + piece if held[-1:].isspace() or not piece else f"{held}\n{piece}"
