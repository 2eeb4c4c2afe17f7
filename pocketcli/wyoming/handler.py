"""One Wyoming client: its events in, info / audio / errors out.

Voices are looked up in the server's ``VoiceBook`` (the same names as
``pockettts serve``: built-in voices, ``--voice-dir`` files, the default) and
spoken through a ``SpokenTurn`` (one live session per synthesis), so the
normaliser, chunking and PCM encoding are the library's. Audio is 16-bit
mono at the model's rate (24 kHz), one ``audio-chunk`` per frame as frames
are made.

Bounded: one event's JSON data and payload together at most
``max_event_bytes``, its header line at most the stream's limit, text per
synthesis ``max_chars``, and a client that sends nothing for
``idle_seconds`` is told so and dropped. A bad request gets an ``error``
event and the connection keeps serving; only an event that cannot be read
(the stream is lost) ends it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.error import Error
from wyoming.event import Event
from wyoming.info import Attribution, Describe, Info, TtsProgram, TtsVoice
from wyoming.ping import Ping, Pong
from wyoming.server import AsyncEventHandler
from wyoming.tts import (
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeStopped,
    SynthesizeTextFormat,
    SynthesizeVoice,
)

from pocketcli import __version__, defaults
from pocketcli.frontends import logs
from pocketcli.frontends.admission import AdmissionLimits, Busy, JobRunner, ShuttingDown
from pocketcli.frontends.encoding import StreamEncoder
from pocketcli.frontends.turns import SpokenTurn, TurnError, describe_failure
from pocketcli.frontends.voices import VoiceBook, VoiceNotFound, VoiceUnreadable
from pocketcli.options import SpeakOptions

if TYPE_CHECKING:
    from pocketcli.frontends.backend import Backend

WIDTH, CHANNELS = 2, 1  # 16-bit mono
KYUTAI = Attribution(name="Kyutai", url="https://github.com/kyutai-labs/pocket-tts")


@dataclass(frozen=True)
class WyomingLimits:
    max_chars: int = defaults.MAX_CHARS  # text per synthesis (streamed or not)
    max_event_bytes: int = 1 << 20  # an event's data and payload
    idle_seconds: float = defaults.WYOMING_IDLE_SECONDS  # a client silent this long is dropped
    admission: AdmissionLimits = AdmissionLimits()  # streams at once, queue, deadline


@dataclass
class Service:
    """What every connection shares: the model, its voices, the limits."""

    backend: Backend
    voices: VoiceBook
    limits: WyomingLimits
    runner: JobRunner  # the one admission every connection's syntheses go through

    def language_code(self) -> str:
        from pocketcli.normalize.languages import resolve

        return resolve(self.backend.language or defaults.LANGUAGE).code

    def info(self) -> Info:
        language = self.language_code()
        voices = [
            TtsVoice(
                name=entry["id"],
                attribution=KYUTAI,
                installed=True,
                description=f"{entry['id']} ({entry['source']})",
                version=None,
                languages=[language],
            )
            for entry in self.voices.listing()
        ]
        program = TtsProgram(
            name="pockettts",
            attribution=KYUTAI,
            installed=True,
            description="Kyutai Pocket TTS, served by pockettts",
            version=__version__,
            voices=voices,
            supports_synthesize_streaming=True,
        )
        return Info(tts=[program])


class BadEvent(Exception):
    """An event that cannot be read: the connection's stream is lost."""


async def read_event(reader: asyncio.StreamReader, max_bytes: int) -> Event | None:
    """The next event (None at the end of the stream), refusing one over ``max_bytes``
    before reading it (the library's reader would read whatever length it is told)."""
    try:
        line = await reader.readline()
    except ValueError:  # over the stream's line limit
        raise BadEvent(f"an event header over {reader._limit} bytes") from None  # noqa: SLF001
    if not line:
        return None
    header, lengths = _header(line, max_bytes)
    data = header.get("data") or {}
    if not isinstance(data, dict):
        raise BadEvent("an event whose data is not an object")
    try:
        if lengths[0]:
            data.update(_object(await reader.readexactly(lengths[0])))
        payload = await reader.readexactly(lengths[1]) if lengths[1] else None
    except asyncio.IncompleteReadError:
        return None
    return Event(type=header["type"], data=data, payload=payload)


def _header(line: bytes, max_bytes: int) -> tuple[dict, list[int]]:
    """An event's header line, and its data and payload lengths, checked."""
    try:
        header = json.loads(line)
    except ValueError:
        raise BadEvent("an event header that is not JSON") from None
    except RecursionError:  # "[[[[...": no event nests past a few levels
        raise BadEvent("an event header nested too deeply") from None
    if not isinstance(header, dict) or not isinstance(header.get("type"), str):
        raise BadEvent("an event header without a type")
    lengths = [header.get("data_length") or 0, header.get("payload_length") or 0]
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in lengths):
        raise BadEvent("an event with a bad data or payload length")
    if sum(lengths) > max_bytes:
        raise BadEvent(f"an event of {sum(lengths)} bytes, over the limit of {max_bytes}")
    return header, lengths


def _object(raw: bytes) -> dict:
    try:
        more = json.loads(raw)
    except ValueError:
        raise BadEvent("an event whose data is not JSON") from None
    except RecursionError:
        raise BadEvent("an event whose data is nested too deeply") from None
    if not isinstance(more, dict):
        raise BadEvent("an event whose data is not an object")
    return more


class PocketHandler(AsyncEventHandler):
    """A connection: events are handled in order; a streamed synthesis speaks in the
    background while its chunks arrive."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, service: Service
    ) -> None:
        super().__init__(reader, writer)
        self.service = service
        self._turn: SpokenTurn | None = None
        self._speaking: asyncio.Task[None] | None = None
        self._streaming = False
        self._write_lock = asyncio.Lock()

    async def run(self) -> None:
        limits = self.service.limits
        try:
            while True:
                try:
                    event = await asyncio.wait_for(
                        read_event(self.reader, limits.max_event_bytes), limits.idle_seconds
                    )
                except TimeoutError:
                    await self._error(
                        f"nothing received for {limits.idle_seconds:g} s: closing", "idle_timeout"
                    )
                    break
                except BadEvent as exc:
                    await self._error(f"cannot read {exc}: closing", "bad_event")
                    break
                if event is None or not await self.handle_event(event):
                    break
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client went away
        finally:
            await self.disconnect()
            self.writer.close()

    async def write_event(self, event: Event) -> None:
        async with self._write_lock:  # the audio task and the handler both write
            await super().write_event(event)

    async def handle_event(self, event: Event) -> bool:
        try:
            await self._handle(event)
        except TurnError as exc:
            await self._error(exc.message, exc.code)
        except (ConnectionError, asyncio.CancelledError):
            raise
        except Exception as exc:  # the client hears one line, the log has a bug's rest
            await self._error(*describe_failure(exc))
        return True

    async def _handle(self, event: Event) -> None:
        if Describe.is_type(event.type):
            await self.write_event(self.service.info().event())
        elif Ping.is_type(event.type):
            await self.write_event(Pong(text=Ping.from_event(event).text).event())
        elif Synthesize.is_type(event.type):
            if self._streaming:
                return  # sent alongside the streamed text for servers that cannot stream
            if not _text(event).strip():
                raise TurnError("synthesize: the text is empty", "empty_text")
            request = Synthesize.from_event(_checked_voice(event))
            turn = await self._turn_for(request.voice, request.text_format)
            try:
                turn.add(request.text)
                turn.end()
            except TurnError:
                await turn.cancel()
                raise
            await self._speak(turn)
        elif SynthesizeStart.is_type(event.type):
            if self._streaming:
                raise TurnError("synthesize-start while a synthesis is streaming", "busy")
            start = SynthesizeStart.from_event(_checked_voice(event))
            self._turn = await self._turn_for(start.voice, start.text_format)
            self._streaming = True
            self._speaking = asyncio.create_task(self._speak(self._turn))
        elif SynthesizeChunk.is_type(event.type):
            turn = self._streamed("synthesize-chunk")
            try:
                turn.add(_text(event))
            except TurnError:
                await self._drop_stream()
                raise
        elif SynthesizeStop.is_type(event.type):
            try:
                self._streamed("synthesize-stop").end()
            except TurnError:
                await self._drop_stream()
                raise
            if self._speaking is not None:
                await self._speaking
            self._turn, self._speaking, self._streaming = None, None, False
            await self.write_event(SynthesizeStopped().event())
        else:
            logs.logger().debug("ignored event", extra={"type": event.type})

    def _streamed(self, what: str) -> SpokenTurn:
        if not self._streaming or self._turn is None:
            raise TurnError(f"{what} without synthesize-start", "not_streaming")
        return self._turn

    async def _turn_for(
        self, voice: SynthesizeVoice | None, text_format: object | None
    ) -> SpokenTurn:
        name = voice.name if voice is not None else None
        try:
            resolved = await asyncio.to_thread(self.service.voices.resolve, name)
        except VoiceNotFound as exc:
            raise TurnError(str(exc), "voice_not_found") from None
        except VoiceUnreadable as exc:  # HTTP's code for it (its log line says more)
            raise TurnError(str(exc), "voice_unreadable") from None
        ssml = True if text_format == SynthesizeTextFormat.SSML else None
        options = SpeakOptions(ssml=ssml)
        limits = self.service.limits
        try:
            return SpokenTurn(
                self.service.backend,
                resolved.state,
                options,
                limits.max_chars,
                self.service.runner,
                front="wyoming",
                seconds=limits.admission.request_seconds,
            )
        except Busy as exc:
            raise TurnError(str(exc), "busy") from None
        except ShuttingDown as exc:
            raise TurnError(str(exc), "shutting_down") from None

    async def _speak(self, turn: SpokenTurn) -> None:
        """audio-start, a chunk per frame as it is made, audio-stop (after an error too)."""
        rate = self.service.backend.sample_rate
        await self.write_event(AudioStart(rate=rate, width=WIDTH, channels=CHANNELS).event())
        encoder = StreamEncoder("pcm", rate)
        try:
            async for audio in turn.audio():
                data = encoder.encode(audio)
                if data:
                    await self.write_event(
                        AudioChunk(rate=rate, width=WIDTH, channels=CHANNELS, audio=data).event()
                    )
        except (ConnectionError, asyncio.CancelledError):
            await turn.cancel()  # the client or the server went away: so does the model's work
            raise
        except Exception as exc:
            await self._error(*describe_failure(exc))
        finally:
            encoder.close()
        await self.write_event(AudioStop().event())
        if turn.warnings:
            logs.logger().info("synthesis notices", extra={"notices": turn.warnings})

    async def _drop_stream(self) -> None:
        turn, task = self._turn, self._speaking
        self._turn, self._speaking, self._streaming = None, None, False
        if turn is not None:
            await turn.cancel()
        if task is not None:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task

    async def _error(self, message: str, code: str) -> None:
        with contextlib.suppress(ConnectionError):
            await self.write_event(Error(text=message, code=code).event())

    async def disconnect(self) -> None:
        await self._drop_stream()


def _checked_voice(event: Event) -> Event:
    """The event, once its ``voice`` is an object with a string ``name`` (the library's
    reader drops a voice of another shape unsaid, or fails on it with a TypeError)."""
    voice = event.data.get("voice")
    if voice is None:
        return event
    if not isinstance(voice, dict):
        shown = repr(voice)[:40]
        raise TurnError(
            f'{event.type}: voice must be an object like {{"name": "alba"}}, not {shown}',
            "bad_request",
        )
    name = voice.get("name")
    if name is not None and not isinstance(name, str):
        raise TurnError(
            f"{event.type}: the voice's name must be a string, not {repr(name)[:40]}",
            "bad_request",
        )
    return event


def _text(event: Event) -> str:
    text = event.data.get("text")
    if not isinstance(text, str):
        raise TurnError(f"{event.type} without a text", "bad_request")
    return text
