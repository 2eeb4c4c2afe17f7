"""Running a request's job and streaming its audio: the part every speaking front end shares.

``run_first`` queues a job and waits for its first result, the client's
departure or the deadline. ``speak`` turns text into a streamed audio response
(``AudioStream``), which stops the job the moment the client goes away and
writes the request's log line and metrics once (``finish``).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import anyio
from fastapi import Request
from fastapi.responses import StreamingResponse

from pocketcli.frontends import logs
from pocketcli.frontends.admission import END, ERROR, Busy, Cancelled, ModelJob, ShuttingDown
from pocketcli.frontends.backend import words_of
from pocketcli.frontends.encoding import StreamEncoder
from pocketcli.frontends.voices import Resolved
from pocketcli.options import SpeakOptions
from pocketcli.serve.apierrors import ApiError, as_api_error
from pocketcli.serve.limits import ARRIVED
from pocketcli.serve.state import Loaded, ServerState

if TYPE_CHECKING:
    from pocketcli.words.align import Word

NOTICE_HEADER = "X-PocketTTS-Notice"


class BodyShape(Protocol):
    """A speech's answer other than its bytes as they are made: OpenAI's events
    (``sse.SpeechEvents``), or the bytes and words as one JSON body (``TimedBody``)."""

    media_type: str
    front: str  # the admission's count it goes to: http, sse

    def wrap(
        self,
        pieces: AsyncIterator[tuple[bytes, Sequence[Word]]],
        frames: Callable[[], int],
        failure: Callable[[], str | None],
    ) -> AsyncIterator[bytes]: ...


async def run_first(request: Request, job: ModelJob, loaded: Loaded) -> tuple[str, Any]:
    """Queues the job and waits for its first result, the client's departure or the
    deadline, whichever comes first (``Cancelled`` when the client left)."""
    try:
        loaded.scheduler.submit(job)
    except Busy as exc:
        raise ApiError(503, str(exc), "queue_full", {"Retry-After": str(exc.retry_after)}) from None
    except ShuttingDown as exc:
        raise ApiError(503, str(exc), "shutting_down") from None
    first = asyncio.ensure_future(job.next())
    gone = asyncio.ensure_future(request.receive())
    try:
        remaining = max(0.0, job.deadline - time.monotonic())
        done, _ = await asyncio.wait(
            {first, gone}, timeout=remaining, return_when=asyncio.FIRST_COMPLETED
        )
    except BaseException:  # this request was cancelled (server shutdown): so is its job
        job.cancel("cancelled")
        first.cancel()
        raise
    finally:
        gone.cancel()
    if first in done:
        kind, value = first.result()
        if kind != ERROR or not isinstance(value, Cancelled) or value.reason != "deadline":
            return kind, value
    else:
        first.cancel()
    if gone in done and gone.result().get("type") == "http.disconnect":
        job.cancel("disconnected")
        raise Cancelled("disconnected")
    job.cancel("deadline")
    seconds = loaded.settings.limits.request_seconds
    raise ApiError(
        503,
        f"no result within the request's limit of {seconds:g} s",
        "timeout",
        {"Retry-After": str(max(1, math.ceil(seconds / 10)))},
    )


@dataclass
class ParsedSpeech:
    """What to say and how: the part of a request a front end has parsed."""

    endpoint: str  # for the log: speech, tts, ...
    text: str
    voice: Resolved
    options: SpeakOptions
    fmt: str
    notices: list[str] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)
    # The answer's shape other than bytes: OpenAI's events (stream_format "sse"), or the
    # audio and its words as one JSON body ("words" without streaming).
    shape: BodyShape | None = None


def check_text(text: str, max_chars: int) -> None:
    if not text.strip():
        raise ApiError(400, "input: the text is empty", "empty_text", param="input")
    if len(text) > max_chars:
        raise ApiError(
            400,
            f"input: {len(text)} characters, over the limit of {max_chars}",
            "text_too_long",
            param="input",
        )


def speech_job(loaded: Loaded, speech: ParsedSpeech, warnings: list[str]) -> ModelJob:
    """The job that makes the speech's frames (the text's warnings go to ``warnings``)."""
    backend = loaded.backend
    return ModelJob(
        lambda: backend.frames(
            speech.text, speech.voice.state, speech.options, on_warning=warnings.append
        ),
        time.monotonic() + loaded.settings.limits.request_seconds,
        front="http" if speech.shape is None else speech.shape.front,
    )


async def speak(request: Request, loaded: Loaded, speech: ParsedSpeech) -> StreamingResponse:
    """The speech as a streamed audio response (errors before the first frame: ApiError)."""
    check_text(speech.text, loaded.settings.limits.max_chars)
    request_id = uuid.uuid4().hex[:16]
    warnings: list[str] = []
    job = speech_job(loaded, speech, warnings)
    record = {
        "request_id": request_id,
        "endpoint": speech.endpoint,
        "voice": speech.voice.name,
        "chars": len(speech.text),
        "format": speech.fmt,
    }
    state = loaded.state
    try:
        first = await run_first(request, job, loaded)
    except Cancelled:
        finish(state, job, record, "disconnected", 0)
        raise ApiError(499, "client went away", "disconnected") from None
    except ApiError as exc:  # queue full, no result in time, shutting down
        finish(state, job, record, exc.code, 0, exc.message)
        raise
    if first[0] == ERROR:
        error = as_api_error(first[1], "text")
        finish(state, job, record, "error", 0, error.message)
        raise error
    notices = [*speech.notices, *warnings]  # the text's notices exist once the first frame does
    if notices:
        record["notices"] = notices
    headers = {
        "Cache-Control": "no-store",
        "X-Request-Id": request_id,
        "X-PocketTTS-Voice": speech.voice.name,
        **speech.headers,
    }
    if notices:
        headers[NOTICE_HEADER] = header_text("; ".join(notices))
    encoder = StreamEncoder(speech.fmt, loaded.backend.sample_rate)
    arrived = request.scope.get("state", {}).get(ARRIVED, job.accepted)
    return AudioStream(state, job, first, encoder, record, headers, arrived, speech.shape)


def finish(
    state: ServerState,
    job: ModelJob,
    record: dict,
    outcome: str,
    samples: int,
    error: str | None = None,
) -> None:
    """The request's log line and generation metrics (HTTP statuses are counted apart)."""
    m = state.metrics
    m.outcomes.labels(outcome if outcome in OUTCOMES else "other").inc()
    fields = dict(
        record, outcome=outcome, frames=job.items, frames_after_cancel=job.items_after_cancel
    )
    if job.started is not None:
        wait = job.started - job.accepted
        m.queue_wait.observe(wait)
        fields["queue_wait_s"] = round(wait, 4)
    if job.first_item is not None:
        ttfa = job.first_item - job.accepted
        m.ttfa.observe(ttfa)
        fields["ttfa_s"] = round(ttfa, 4)
    backend = state.backend
    if job.started is not None and job.finished is not None and backend is not None and samples:
        spent = max(job.finished - job.started, 1e-9)
        audio = samples / backend.sample_rate
        m.audio_seconds.inc(audio)
        m.generation_seconds.inc(spent)
        m.rtfx.observe(audio / spent)
        fields.update(
            audio_s=round(audio, 3), synthesis_s=round(spent, 4), rtfx=round(audio / spent, 2)
        )
    if "first_byte_s" in record:
        m.ttfb.observe(record["first_byte_s"])
    if error:
        fields["error"] = error
    logs.logger().info("speech", extra=fields)


# The outcomes a generation can have: a fixed set of metric labels.
OUTCOMES = frozenset(
    {
        "done",
        "disconnected",
        "deadline",
        "shutdown",
        "cancelled",
        "error",
        "queue_full",
        "timeout",
        "shutting_down",
        "not_ready",
    }
)


class AudioStream(StreamingResponse):
    """Streams a job's frames; stops the job the moment the client goes away.

    Disconnects are watched whatever ASGI spec version the server speaks, and
    whatever ends the stream (end, client gone, deadline, shutdown) cancels
    the job and writes the request's log line once.
    """

    def __init__(
        self,
        state: ServerState,
        job: ModelJob,
        first: tuple[str, Any],
        encoder: StreamEncoder,
        record: dict,
        headers: dict[str, str],
        arrived: float,
        shape: BodyShape | None = None,
    ) -> None:
        self.state, self.job, self.encoder, self.record = state, job, encoder, record
        self.arrived = arrived
        self.outcome = "cancelled"  # what it stays if the server stops the stream (shutdown)
        self.samples = 0
        self.error: str | None = None
        pieces = self._pieces(first)
        if shape is None:
            body, media_type = _bytes_of(pieces), encoder.media_type
        else:  # the same bytes, as events or in a JSON body, with the words
            body = shape.wrap(pieces, lambda: job.items, lambda: self.error)
            media_type = shape.media_type
        super().__init__(body, media_type=media_type, headers=headers)

    async def _pieces(self, first: tuple[str, Any]) -> AsyncIterator[tuple[bytes, Sequence[Word]]]:
        """Each frame's encoded bytes (maybe none yet) and the words it ends, as made."""
        kind, value = first
        while True:
            if kind == END:
                tail = self.encoder.finish()
                if tail:
                    yield tail, ()
                self.outcome = "done"
                return
            if kind == ERROR:
                self.outcome = value.reason if isinstance(value, Cancelled) else "error"
                self.error = str(value)
                raise _Aborted()
            self.samples += value.size
            chunk = self.encoder.encode(value)
            if chunk and "first_byte_s" not in self.record:
                self.record["first_byte_s"] = round(time.monotonic() - self.arrived, 4)
            yield chunk, words_of(value)
            kind, value = await self.job.next()

    async def __call__(self, scope, receive, send) -> None:  # type: ignore[override]
        # The deadline ends the response as well as the generation: a client that reads
        # slowly (or not at all) holds neither the model nor the server past it.
        left = max(0.0, self.job.deadline - time.monotonic())
        try:
            with anyio.move_on_after(left) as deadline:
                async with anyio.create_task_group() as group:

                    async def watch() -> None:
                        await self.listen_for_disconnect(receive)
                        if self.outcome == "cancelled":
                            self.outcome = "disconnected"
                        group.cancel_scope.cancel()

                    group.start_soon(watch)
                    with contextlib.suppress(_Aborted):
                        await self.stream_response(send)
                    group.cancel_scope.cancel()
            if deadline.cancelled_caught and self.outcome == "cancelled":
                self.outcome = "deadline"
        finally:
            if self.outcome != "done":
                self.job.cancel(self.outcome)
            self.encoder.close()
            self.finish()

    def finish(self) -> None:
        finish(self.state, self.job, self.record, self.outcome, self.samples, self.error)


async def _bytes_of(pieces: AsyncIterator[tuple[bytes, Sequence[Word]]]) -> AsyncIterator[bytes]:
    async for chunk, _words in pieces:
        if chunk:
            yield chunk


class _Aborted(Exception):
    """Ends a stream without its final chunk, so the client sees it incomplete."""


def header_text(text: str) -> str:
    """One line of printable ASCII (a header cannot carry more), at most 500 characters."""
    line = " ".join(text.split()).encode("ascii", "replace").decode()
    return line if len(line) <= 500 else line[:497] + "..."
