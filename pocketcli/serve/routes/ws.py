"""The streaming websocket ``/tts/ws``: livekit-streaming-tts's protocol, as
``livekit-plugins-pocket`` speaks it.

Client frames are JSON ``{"type": ..., "data": {...}}`` (a frame with fields
beside ``type`` is refused naming the envelope, never taken with them unread):

- ``config`` sets up the turns that follow: ``sample_rate`` (8000-48000,
  default the model's), ``normalize``, ``pauses``, ``format`` ("pcm"),
  ``binary`` (PCM as binary frames, else base64 ``audio`` frames), ``voice``
  (a voice of this server), ``language`` (the model's own), and
  ``seed``/``temperature``/``speed`` as in the speech API, and ``words``
  (word timings: a model that cannot give them refuses the config, code
  ``words_unavailable``), each checked by type
  (``frontends.requests.WsConfig``). The answer is the event
  ``config_accepted`` with the next turn's request id; a config that fails
  leaves the socket's config and turn as they were, and its error says so.
- ``text`` adds text to the turn (the first starts it: the turn is admitted
  then, as a stream of the server's admission); each sentence is spoken as it
  completes (``SpokenTurn``: one live session per turn).
- ``flush`` ends the turn: the rest is spoken, then the event ``final``.
- ``cancel`` stops every turn of the socket before its next frame and drops
  their audio; the socket stays open for the next ``config``.
- ``ping`` is answered with ``pong``.

Audio is 16-bit little-endian mono PCM, one frame (80 ms) per message, at the
rate the config asked for (resampled when it is not the model's). With
``words`` each word is a frame ``{"type": "word", "data": {"word", "start",
"end"}}`` (seconds from the start of the turn's audio, to the ms) after the
audio frame that ends it. Errors are
``{"type": "error", "data": {"message", "code"}}`` (text HTTP refuses:
its message, code ``invalid_text``) and the socket keeps
serving, except for a frame that cannot be read, and a turn the admission
refuses: ``busy`` (with ``retry_after``, seconds) or ``shutting_down``, then
close code 1013 (1012 shutting down). A turn past ``--request-timeout`` ends
with the error ``timeout``. With ``--api-key`` the
handshake must carry ``Authorization: Bearer KEY`` (or ``X-API-Key``); a
wrong or missing key is refused before the socket opens (HTTP 403).

Bounded: a frame at most ``ws_max_message_bytes`` (the websocket library
closes with 1009 past it), text per turn ``max_chars``, at most
``ws_max_sockets`` open at once, and a socket that neither sends nor is
sent audio for ``ws_idle_seconds`` is told so and closed (a turn left open
without a flush keeps no socket alive).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import time
import uuid
from collections import deque
from typing import Any

import numpy as np
from fastapi import APIRouter, WebSocket, WebSocketDisconnect

from pocketcli.frontends import logs
from pocketcli.frontends.admission import Busy, ShuttingDown
from pocketcli.frontends.backend import words_of
from pocketcli.frontends.encoding import StreamEncoder
from pocketcli.frontends.requests import FieldProblem, WsConfig, checked
from pocketcli.frontends.turns import SpokenTurn, TurnError, describe_failure, language_problem
from pocketcli.serve import fields
from pocketcli.serve.apierrors import ApiError
from pocketcli.serve.limits import key_matches
from pocketcli.serve.state import Loaded, ready, state_of
from pocketcli.words.align import Word
from pocketcli.words.captions import word_row

router = APIRouter()

OPTION_FIELDS = ("seed", "temperature", "normalize", "speed")


class _Closing(Exception):
    """Ends the socket: a frame that cannot be read, or a limit that ends it."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.message, self.code = message, code


@router.websocket("/tts/ws")
async def tts_ws(websocket: WebSocket) -> None:
    state = state_of(websocket)  # type: ignore[arg-type]
    key = state.settings.api_key
    if key and not key_matches(dict(websocket.scope["headers"]), key.encode()):
        await websocket.close(code=1008)  # before accept: the handshake is refused (403)
        return
    await websocket.accept()
    limits = state.settings.limits
    sockets: set[WebSocket] | None = getattr(websocket.app.state, "pockettts_ws", None)
    if sockets is None:  # the sockets open on this app
        sockets = websocket.app.state.pockettts_ws = set()
    if len(sockets) >= limits.ws_max_sockets:
        await _send_error(
            websocket, f"{len(sockets)} sockets are open, the server's limit", "too_many_sockets"
        )
        await websocket.close(code=1013)
        return
    try:
        loaded = ready(websocket)  # type: ignore[arg-type]
    except ApiError as exc:
        await _send_error(websocket, exc.message, exc.code)
        await websocket.close(code=1013)
        return
    sockets.add(websocket)
    socket = _Socket(websocket, loaded)
    try:
        await socket.serve()
    finally:
        sockets.discard(websocket)
        await socket.close()


class _Refused(Exception):
    """The admission's answer to a turn: busy, or shutting down. The socket hears an
    error frame and is closed with ``close_code`` (1013: try again later)."""

    def __init__(self, message: str, code: str, close_code: int, retry_after: int = 0) -> None:
        super().__init__(message)
        self.message, self.code, self.close_code = message, code, close_code
        self.retry_after = retry_after


class _Socket:
    """One socket: its frames in order; its turns spoken in order by one task.

    Every turn is a stream of the server's admission (``SpokenTurn``): a flood
    of flushes queues within ``--max-streams`` and ``--max-queue`` or is refused
    (an error frame "busy" and close code 1013), never a thread per flush. A
    ``cancel`` frame, a new ``config`` and the socket's end stop every turn the
    socket started, not just the newest."""

    def __init__(self, websocket: WebSocket, loaded: Loaded) -> None:
        self.ws, self.loaded = websocket, loaded
        self.limits = loaded.settings.limits
        self.config: dict[str, Any] | None = None
        self.turn: SpokenTurn | None = None  # the turn taking text
        self.turns: deque[tuple[SpokenTurn, str]] = deque()  # started, not yet spoken out
        self.request_id: str | None = None  # the next turn's
        self._ready = asyncio.Event()  # a turn waits in ``turns``
        self.playing = False  # the first of ``turns`` is being spoken
        self._speaker: asyncio.Task[None] | None = None
        self._send_lock = asyncio.Lock()
        self.last_active = time.monotonic()  # the last frame received or audio sent

    async def serve(self) -> None:
        self._speaker = asyncio.create_task(self._speak_turns())
        while True:
            try:
                message = await self._receive()
            except (WebSocketDisconnect, RuntimeError):
                return  # the client went away (RuntimeError: the socket is already closed)
            except _Closing as exc:
                await self.error(exc.message, exc.code)
                with contextlib.suppress(Exception):
                    await self.ws.close(code=1008 if exc.code != "idle_timeout" else 1000)
                return
            try:
                await self._handle(message)
            except _Refused as exc:
                await self.refuse(exc)
                return
            except (ApiError, TurnError) as exc:
                await self.error(exc.message, exc.code)
            except (WebSocketDisconnect, RuntimeError):
                return
            except Exception as exc:  # the client hears one line, the log has a bug's rest
                await self.error(*describe_failure(exc))

    @property
    def speaking(self) -> bool:
        """Whether a turn the client ended is still being made or sent."""
        return any(turn is not self.turn for turn, _ in self.turns)

    async def _receive(self) -> dict[str, Any]:
        idle = self.limits.ws_idle_seconds
        receiving = asyncio.ensure_future(self.ws.receive())
        while True:
            # Idle: nothing received and no audio sent for ``idle`` seconds, unless a
            # flushed turn is still being made (it may wait for the model). A turn left
            # open without a flush, its audio all sent, is idle: it only waits for text.
            left = self.last_active + idle - time.monotonic()
            if self.speaking:
                left = max(left, idle)
            if left > 0:
                done, _ = await asyncio.wait({receiving}, timeout=left)
                if receiving in done:
                    break
                continue
            receiving.cancel()
            raise _Closing(f"nothing received for {idle:g} s: closing", "idle_timeout")
        self.last_active = time.monotonic()
        raw = receiving.result()
        if raw["type"] == "websocket.disconnect":
            raise WebSocketDisconnect(raw.get("code", 1000))
        text = raw.get("text")
        if text is None:
            data = raw.get("bytes") or b""
            try:
                text = data.decode()
            except UnicodeDecodeError:
                raise _Closing("a binary frame that is not UTF-8 JSON", "bad_frame") from None
        try:
            message = json.loads(text)
        except ValueError:
            raise _Closing("a frame that is not JSON", "bad_frame") from None
        if not isinstance(message, dict) or not isinstance(message.get("type"), str):
            raise _Closing('a frame without a "type"', "bad_frame")
        return message

    async def _handle(self, message: dict[str, Any]) -> None:
        kind = message["type"]
        beside = sorted(set(message) - {"type", "data"})
        if beside:  # a client that left out the envelope: its fields would go unread
            shown = ", ".join(repr(k[:20]) for k in beside[:4])
            raise TurnError(
                f'{kind[:40]}: fields go inside "data" ({{"type": "{kind[:40]}", "data": '
                f'{{...}}}}), not beside "type": {shown}',
                "bad_request",
            )
        data = message.get("data") or {}
        if not isinstance(data, dict):
            raise TurnError(f"{kind[:40]}: data must be an object", "bad_request")
        if kind == "config":
            await self._configure(data)
        elif kind == "text":
            await self._add_text(data)
        elif kind == "flush":
            self._current_turn().end()
            self.turn = None  # its audio and final follow; the next text starts another turn
        elif kind == "cancel":
            await self.drop_turns()
        elif kind == "ping":
            await self.send_json({"type": "pong"})
        else:
            raise TurnError(
                f"unknown frame type {kind[:40]!r}; use config, text, flush or cancel",
                "bad_request",
            )

    async def _add_text(self, data: dict[str, Any]) -> None:
        text = data.get("text")
        if not isinstance(text, str):
            raise TurnError("text: data.text must be a string", "bad_request")
        turn = self._current_turn()
        try:
            turn.add(text)
        except TurnError:
            await self.drop_turns()
            raise

    async def _configure(self, data: dict[str, Any]) -> None:
        try:
            config = await self._checked_config(data)
        except (ApiError, TurnError) as exc:
            kept = "its config is as it was" if self.config else "it still has no config"
            raise TurnError(f"{exc.message}; {kept}", exc.code) from None
        await self.drop_turns()  # a config starts a new turn: the last ones' audio is dropped
        self.config = config
        # The turn starts (and is admitted) with its first text, not here: a socket
        # that only configures holds no stream.
        self.request_id = uuid.uuid4().hex[:16]
        await self.send_event("config_accepted")

    async def _checked_config(self, data: dict[str, Any]) -> dict[str, Any]:
        """The socket's config from a ``config`` frame's data (or the error, unchanged)."""
        given = checked(WsConfig, data)
        if isinstance(given, FieldProblem):
            code = "invalid_option" if given.field in OPTION_FIELDS else "invalid_config"
            raise TurnError(given.message, code)
        backend = self.loaded.backend
        if given.format != "pcm":
            shown = given.format[:40]
            raise TurnError(f"format {shown!r}: only 'pcm' (16-bit mono) is sent", "invalid_config")
        problem = language_problem(backend.language, given.language)
        if problem is not None:
            raise TurnError(problem, "unsupported_language")
        try:
            words = fields.words(self.loaded, given.words)
        except ApiError as exc:
            raise TurnError(exc.message, exc.code) from None
        voice = await fields.voice(self.loaded, given.voice)
        options = fields.speak_options(
            seed=given.seed,
            temperature=given.temperature,
            normalize=given.normalize,
            speed=given.speed,
            words=words,
        )
        return {
            "rate": given.sample_rate or backend.sample_rate,
            "binary": given.binary,
            "voice": voice,
            "options": options,
        }

    def _current_turn(self) -> SpokenTurn:
        if self.turn is not None:
            return self.turn
        if self.config is None:
            raise TurnError("send a config frame first", "no_config")
        config = self.config
        try:
            turn = SpokenTurn(
                self.loaded.backend,
                config["voice"].state,
                config["options"],
                self.limits.max_chars,
                self.loaded.scheduler,
                front="websocket",
                seconds=self.limits.request_seconds,
            )
        except Busy as exc:
            raise _Refused(str(exc), "busy", 1013, exc.retry_after) from None
        except ShuttingDown as exc:
            raise _Refused(str(exc), "shutting_down", 1012) from None
        request_id = self.request_id or uuid.uuid4().hex[:16]
        self.request_id = None  # the next turn on this config gets its own
        self.turn = turn
        self.turns.append((turn, request_id))
        self._ready.set()
        return turn

    async def _speak_turns(self) -> None:
        """The socket's turns, one after another, in the order they started."""
        while True:
            await self._ready.wait()
            while self.turns:
                turn, request_id = self.turns[0]
                self.playing = True
                try:
                    await self._speak(turn, request_id)
                finally:
                    self.playing = False
                    if self.turns and self.turns[0][0] is turn:
                        self.turns.popleft()
            self._ready.clear()

    async def _speak(self, turn: SpokenTurn, request_id: str) -> None:
        """The turn's audio as it is made (and its words), then ``final`` (not after a
        cancel)."""
        assert self.config is not None
        binary = self.config["binary"]
        out = _TurnAudio(self.loaded.backend.sample_rate, self.config["rate"])
        outcome = "cancelled"  # what it stays if the socket or the server goes away
        try:
            async for audio in turn.audio():
                await self._send_out(*out.frame(audio), binary)
            if turn.cancelled:
                return
            await self._send_out(*out.end(), binary)
            await self.send_event("final", request_id)
            outcome = "done"
        except (WebSocketDisconnect, RuntimeError, asyncio.CancelledError):
            await turn.cancel()
            raise
        except TurnError as exc:  # past the deadline
            outcome = exc.code
            await self.error(exc.message, exc.code)
        except Exception as exc:
            outcome = "error"
            await self.error(*describe_failure(exc))
        finally:
            out.close()
            _record(turn, request_id, outcome)

    async def _send_out(self, pcm: bytes, words: list[Word], binary: bool) -> None:
        await self._send_audio(pcm, binary)
        for word in words:
            await self.send_json({"type": "word", "data": word_row(word)})

    async def _send_audio(self, pcm: bytes, binary: bool) -> None:
        if not pcm:
            return
        self.last_active = time.monotonic()
        async with self._send_lock:
            if binary:
                await self.ws.send_bytes(pcm)
            else:
                audio = base64.b64encode(pcm).decode()
                await self.ws.send_text(json.dumps({"type": "audio", "data": {"audio": audio}}))

    async def send_json(self, payload: dict[str, Any]) -> None:
        async with self._send_lock:
            await self.ws.send_text(json.dumps(payload))

    async def send_event(self, name: str, request_id: str | None = None) -> None:
        body = {"event_type": name, "request_id": request_id or self.request_id}
        await self.send_json({"type": "event", "data": body})

    async def error(self, message: str, code: str, **more: Any) -> None:
        with contextlib.suppress(Exception):  # a socket already gone hears nothing
            data = {"message": message, "code": code, **more}
            await self.send_json({"type": "error", "data": data})

    async def refuse(self, refused: _Refused) -> None:
        """The busy answer: an error frame (with ``retry_after``), then the close code."""
        more = {"retry_after": refused.retry_after} if refused.retry_after else {}
        await self.error(refused.message, refused.code, **more)
        with contextlib.suppress(Exception):
            await self.ws.close(code=refused.close_code)

    async def drop_turns(self) -> None:
        """Cancels every turn this socket started (the one taking text, those waiting,
        the one being spoken): none of their audio is sent after this returns."""
        turns = list(self.turns)
        self.turn = None
        self.turns.clear()
        for i, (turn, request_id) in enumerate(turns):
            await turn.cancel()
            if i or not self.playing:  # the one being spoken logs its own end
                _record(turn, request_id, "cancelled")

    async def close(self) -> None:
        """The socket's end: every turn stops, and so does the task that speaks them."""
        await self.drop_turns()
        speaker, self._speaker = self._speaker, None
        if speaker is not None:
            speaker.cancel()
            with contextlib.suppress(BaseException):
                await speaker


class _TurnAudio:
    """A turn's samples as the socket sends them: resampled to the config's rate, 16-bit
    PCM, and the words each frame ends held until the audio up to their end is sent (a
    resampler holds a few ms back; the last of them at the audio's end)."""

    def __init__(self, model_rate: int, rate: int) -> None:
        self.rate = rate
        self.encoder = StreamEncoder("pcm", rate)
        self.resampler = None
        if rate != model_rate:
            import soxr

            self.resampler = soxr.ResampleStream(model_rate, rate, 1, dtype="float32")
        self.sent = 0  # samples at ``rate``
        self.waiting: deque[Word] = deque()

    def frame(self, audio: np.ndarray) -> tuple[bytes, list[Word]]:
        """A frame's PCM and the words whose audio it completes."""
        self.waiting.extend(words_of(audio))
        if self.resampler is not None:
            audio = self.resampler.resample_chunk(np.asarray(audio, np.float32))
        return self._out(self.encoder.encode(audio))

    def end(self) -> tuple[bytes, list[Word]]:
        """The audio's tail and every word still waiting."""
        pcm = b""
        if self.resampler is not None:
            tail = self.resampler.resample_chunk(np.zeros(0, np.float32), last=True)
            pcm = self.encoder.encode(tail)
        pcm += self.encoder.finish()
        pcm, words = self._out(pcm)
        return pcm, words + list(self.waiting)

    def _out(self, pcm: bytes) -> tuple[bytes, list[Word]]:
        self.sent += len(pcm) // 2
        heard = self.sent / self.rate
        due: list[Word] = []
        while self.waiting and self.waiting[0].end <= heard + 1e-9:
            due.append(self.waiting.popleft())
        return pcm, due

    def close(self) -> None:
        self.encoder.close()


def _record(turn: SpokenTurn, request_id: str, outcome: str) -> None:
    """The turn's log line, once, however it ended."""
    logs.logger().info(
        "ws turn",
        extra={
            "request_id": request_id,
            "outcome": outcome,
            "chars": turn.chars,
            "samples": turn.samples,
            "frames": turn.job.items,
            "frames_after_cancel": turn.job.items_after_cancel,
        },
    )


async def _send_error(websocket: WebSocket, message: str, code: str) -> None:
    with contextlib.suppress(Exception):
        payload = {"type": "error", "data": {"message": message, "code": code}}
        await websocket.send_text(json.dumps(payload))
