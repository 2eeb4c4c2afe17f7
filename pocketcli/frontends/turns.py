"""A spoken turn: text that arrives in pieces, spoken sentence by sentence as it completes.

The websocket (``/tts/ws``) and Wyoming's streaming synthesis both get text
as an LLM writes it. A ``SpokenTurn`` cuts it where ``split_ready`` says a
sentence is complete and enqueues each sentence in one live ``Session``
(``PocketTTS.session``: the same normaliser, chunking, voice and seeded noise
as every other front end), so the first sentence is heard while the rest is
still being written. Its frames reach the event loop through a thread of its
own (never the loop's shared executor, which a few slow readers would fill).

Markup is never cut inside an element: with SSML on (``SpeakOptions.ssml``,
or a turn that starts with ``<speak>``) sentences are held until the elements
open in them close, so a ``<speak>`` document or an ``<emphasis>`` across a
sentence end is spoken whole, not dropped as malformed halves.

Text HTTP refuses is refused here too (``TurnError`` with code ``invalid_text``
and HTTP's message): malformed markup, and a turn with nothing to say at all. A
sentence with nothing to say inside a turn that says something is skipped
with a warning.

Bounded: at most ``max_chars`` characters per turn; ``cancel`` stops the
generation before its next frame.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import threading
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import numpy as np

from pocketcli import defaults
from pocketcli.options import SpeakOptions
from pocketcli.text.sentences import split_ready

if TYPE_CHECKING:
    from pocketcli.frontends.backend import Backend
    from pocketcli.voices.state import VoiceState


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


_END = object()

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
    """``add(text)`` as pieces arrive, ``end()`` once; ``async for audio in turn.audio()``."""

    def __init__(
        self,
        backend: Backend,
        voice: VoiceState | None,
        options: SpeakOptions,
        max_chars: int,
    ) -> None:
        self.warnings: list[str] = []
        self.max_chars = max_chars
        self.chars = 0
        self.samples = 0
        self._pending = ""
        self._held = ""  # complete sentences inside a markup element still open
        self._ssml = options.ssml
        self._spoken = 0  # sentences taken by the session
        self._nothing: str | None = None  # why a sentence had nothing to say, if one had
        self._session = backend.tts.session(voice, options, on_warning=self.warnings.append)
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[object] = asyncio.Queue()
        self._reader = threading.Thread(target=self._read, name="pockettts-turn", daemon=True)
        self._reader.start()

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
        if not self._spoken and self._nothing is not None:
            # Nothing in the whole turn could be said: refused as HTTP refuses such a text.
            raise TurnError(self._nothing, "invalid_text")
        self._session.finish()

    def _markup(self, text: str) -> bool:
        """Whether ``text`` is read as SSML (as the normaliser decides it)."""
        if self._ssml is not None:
            return self._ssml
        return text.lstrip().startswith(("<speak", "<?xml"))

    def _say(self, text: str) -> None:
        from pocketcli.normalize import MarkupError
        from pocketcli.session import SessionClosed
        from pocketcli.text import EmptyTextError

        if not text.strip():
            return
        try:
            self._session.enqueue(text)
        except SessionClosed:
            raise TurnError("this turn is over; start another", "turn_closed") from None
        except MarkupError as exc:  # malformed markup: refused, as HTTP refuses it
            raise TurnError(str(exc), "invalid_text") from None
        except EmptyTextError as exc:  # this sentence only (a "###"): the rest goes on
            self._nothing = str(exc)
            self.warnings.append(f"skipped {' '.join(text.split())[:40]!r}: {exc}")
        else:
            self._spoken += 1

    # -- audio out --------------------------------------------------------------
    async def audio(self) -> AsyncIterator[np.ndarray]:
        """The turn's samples (float32, the model's rate) as they are made; raises the
        generation's error, if any, after the frames made before it."""
        while True:
            item = await self._queue.get()
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise item
            assert isinstance(item, np.ndarray)
            self.samples += item.size
            yield item

    def _read(self) -> None:
        try:
            for frame in self._session:
                self._put(frame.audio)
        except BaseException as exc:  # the reader gets it in order, after the frames
            self._put(exc)
        self._put(_END)

    def _put(self, item: object) -> None:
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody listens any more
            self._loop.call_soon_threadsafe(self._queue.put_nowait, item)

    async def cancel(self) -> None:
        """Stops the generation before its next frame; returns once the model is free."""
        await asyncio.to_thread(self._session.cancel)

    @property
    def cancelled(self) -> bool:
        return self._session.cancelled


def _joined(held: str, piece: str) -> str:
    """``piece`` after ``held``, on a line of its own where ``split_ready`` took the newline."""
    if not held:
        return piece
    return held + piece if held[-1:].isspace() or not piece else f"{held}\n{piece}"
