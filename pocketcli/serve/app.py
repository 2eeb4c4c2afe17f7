"""The ASGI app: OpenAI's speech API, pocket-tts's ``/tts``, voices, health, metrics, page.

``create_app(load, settings)`` returns a FastAPI app whose lifespan loads the
model on a thread (``/readyz`` answers 503 until it is loaded) and, at
shutdown, cancels whatever the model still has to do.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from importlib import resources
from typing import TYPE_CHECKING, Annotated, Any

import anyio
from fastapi import FastAPI, File, Form, Request, UploadFile
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict

from pocketcli.options import SpeakOptions
from pocketcli.serve import logs
from pocketcli.serve.backend import Backend
from pocketcli.serve.encoding import FORMATS, StreamEncoder, available_formats
from pocketcli.serve.limits import ARRIVED, ApiKey, BodyLimit, ServeSettings, error_body
from pocketcli.serve.metrics import CONTENT_TYPE, Metrics
from pocketcli.serve.scheduler import (
    END,
    ERROR,
    Cancelled,
    Job,
    QueueFull,
    Scheduler,
    ShuttingDown,
)
from pocketcli.serve.voices import Resolved, VoiceBook, VoiceNotFound

if TYPE_CHECKING:
    from pocketcli.voices.state import VoiceState

# Ids OpenAI clients send, all served by the one loaded model.
MODEL_IDS = ("pockettts", "pocket-tts", "tts-1", "tts-1-hd", "gpt-4o-mini-tts")
MIN_SPEED, MAX_SPEED = 0.25, 4.0
NOTICE_HEADER = "X-PocketTTS-Notice"


class ApiError(Exception):
    def __init__(
        self, status: int, message: str, code: str, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.code, self.headers = status, message, code, headers


class VoiceRef(BaseModel):
    id: str


class SpeechRequest(BaseModel):
    """OpenAI's ``POST /v1/audio/speech`` body, plus ``seed`` and ``temperature``."""

    model_config = ConfigDict(extra="ignore")

    model: str
    input: str
    voice: str | VoiceRef | None = None
    response_format: str | None = None
    speed: float = 1.0
    instructions: str | None = None
    stream_format: str | None = None
    seed: int | None = None
    temperature: float | None = None


@dataclass
class ServerState:
    settings: ServeSettings
    metrics: Metrics = field(default_factory=Metrics)
    backend: Backend | None = None
    voices: VoiceBook | None = None
    scheduler: Scheduler | None = None
    load_error: str | None = None
    on_load_failed: Callable[[str], None] | None = None

    def ready(self) -> tuple[Backend, VoiceBook, Scheduler]:
        if self.backend is None or self.voices is None or self.scheduler is None:
            if self.load_error is not None:
                raise ApiError(503, f"the model failed to load: {self.load_error}", "not_ready")
            raise ApiError(503, "the model is still loading", "not_ready", {"Retry-After": "2"})
        return self.backend, self.voices, self.scheduler

    def update_gauges(self) -> None:
        if self.scheduler is not None:
            self.metrics.queue_depth.set(self.scheduler.waiting)
            self.metrics.active.set(self.scheduler.active)

    def load(self, load: Callable[[], Backend]) -> None:
        log = logs.logger()
        started = time.perf_counter()
        try:
            backend = load()
        except BaseException as exc:  # reported, and the server stops (see server.run)
            self.load_error = str(exc) or type(exc).__name__
            log.error("model load failed", extra={"error": self.load_error})
            if self.on_load_failed is not None:
                self.on_load_failed(self.load_error)
            return
        limits = self.settings.limits
        self.voices = VoiceBook(backend, self.settings.voice_dir, limits.max_cloned_voices)
        self.scheduler = Scheduler(limits.max_queue, self.update_gauges)
        self.backend = backend
        self.metrics.ready.set(1)
        log.info(
            "ready",
            extra={
                "load_s": round(time.perf_counter() - started, 3),
                "voice": backend.default_voice_name,
                "sample_rate": backend.sample_rate,
                "formats": list(available_formats()),
            },
        )


def create_app(load: Callable[[], Backend], settings: ServeSettings | None = None) -> FastAPI:
    settings = settings or ServeSettings()
    state = ServerState(settings)
    limits = settings.limits
    log = logs.logger()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        threading.Thread(
            target=state.load, args=(load,), name="pockettts-load", daemon=True
        ).start()
        yield
        if state.scheduler is not None:
            await anyio.to_thread.run_sync(state.scheduler.close, settings.shutdown_seconds)

    app = FastAPI(
        title="pockettts",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    app.state.pockettts = state

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        state.metrics.requests.labels(request.url.path, str(exc.status)).inc()
        kind = "server_error" if exc.status >= 500 else "invalid_request_error"
        return JSONResponse(error_body(exc.message, exc.code, kind), exc.status, exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        if first.get("type") == "json_invalid":
            message = f"the body is not valid JSON (at character {where or 0})"
        elif where:
            message = f"{where}: {first.get('msg', 'invalid request')}"
        else:  # the body as a whole: a form, a list, a string...
            message = "the body must be a JSON object (Content-Type: application/json)"
        state.metrics.requests.labels(request.url.path, "400").inc()
        return JSONResponse(error_body(message, "invalid_request"), 400)

    # -- health, metrics, page ------------------------------------------------
    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/health")  # pocket-tts serve's
    async def health() -> dict[str, str]:
        return {"status": "healthy"}

    @app.get("/readyz")
    async def readyz() -> JSONResponse:
        if state.backend is None:
            status = "failed" if state.load_error else "loading"
            return JSONResponse({"status": status, "error": state.load_error}, 503)
        return JSONResponse(
            {
                "status": "ready",
                "voice": state.backend.default_voice_name,
                "sample_rate": state.backend.sample_rate,
                "formats": list(available_formats()),
            }
        )

    @app.get("/metrics")
    async def metrics() -> Response:
        state.update_gauges()
        return Response(state.metrics.render(), media_type=CONTENT_TYPE)

    @app.get("/", response_class=HTMLResponse)
    async def page() -> str:
        html = resources.files("pocketcli.serve").joinpath("static/index.html")
        return html.read_text(encoding="utf-8")

    # -- OpenAI -----------------------------------------------------------------
    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [_model(m) for m in MODEL_IDS]}

    @app.get("/v1/models/{model_id}")
    async def model(model_id: str) -> dict[str, Any]:
        if model_id not in MODEL_IDS:
            raise ApiError(
                404, f"no model {model_id!r}; models: {', '.join(MODEL_IDS)}", "model_not_found"
            )
        return _model(model_id)

    @app.post("/v1/audio/speech")
    async def speech(body: SpeechRequest, request: Request) -> Response:
        if body.model not in MODEL_IDS:
            raise ApiError(
                400,
                f"unknown model {body.model!r}; use one of {', '.join(MODEL_IDS)}",
                "model_not_found",
            )
        fmt = body.response_format or ("mp3" if "mp3" in available_formats() else "wav")
        _check_format(fmt)
        if body.stream_format not in (None, "audio"):
            raise ApiError(
                400,
                "stream_format: only 'audio' (bytes as they are made) is served",
                "invalid_stream_format",
            )
        if not MIN_SPEED <= body.speed <= MAX_SPEED or not math.isfinite(body.speed):
            raise ApiError(400, f"speed must be from {MIN_SPEED} to {MAX_SPEED}", "invalid_speed")
        notices = []
        if body.speed != 1.0:
            notices.append(f"speed {body.speed:g} is not supported: the audio is at normal speed")
        options = _options(seed=body.seed, temperature=body.temperature)
        voice_name = body.voice.id if isinstance(body.voice, VoiceRef) else body.voice
        voice = await _voice(voice_name)
        return await _speak(request, "speech", body.input, voice, options, fmt, notices, {})

    # -- voices -----------------------------------------------------------------
    @app.get("/v1/voices")
    async def list_voices() -> dict[str, Any]:
        _, voices, _ = state.ready()
        listing = await anyio.to_thread.run_sync(voices.listing)
        return {"object": "list", "data": listing}

    @app.post("/v1/voices")
    async def add_voice(request: Request, file: Annotated[UploadFile, File()]) -> JSONResponse:
        voice_id, _, seconds, cached, notes = await _clone(request, file)
        body = {
            "id": voice_id,
            "object": "voice",
            "seconds": seconds,
            "cached": cached,
            "notices": notes,
        }
        state.metrics.requests.labels("/v1/voices", "200").inc()
        return JSONResponse(body)

    @app.delete("/v1/voices/{voice_id}")
    async def delete_voice(voice_id: str) -> dict[str, Any]:
        _, voices, _ = state.ready()
        if not voices.forget_cloned(voice_id):
            raise ApiError(404, f"no cloned voice {voice_id!r}", "voice_not_found")
        return {"id": voice_id, "object": "voice", "deleted": True}

    # -- pocket-tts serve's form endpoint --------------------------------------------
    @app.post("/tts")
    async def tts_form(
        request: Request,
        text: Annotated[str, Form()],
        voice_url: Annotated[str | None, Form()] = None,
        voice_wav: Annotated[UploadFile | None, File()] = None,
        seed: Annotated[int | None, Form()] = None,
        temperature: Annotated[float | None, Form()] = None,
        response_format: Annotated[str, Form()] = "wav",
    ) -> Response:
        if not text.strip():
            raise ApiError(400, "Text cannot be empty", "empty_text")
        if voice_url is not None and voice_wav is not None:
            raise ApiError(400, "Cannot provide both voice_url and voice_wav", "voice_conflict")
        _check_format(response_format)
        options = _options(seed=seed, temperature=temperature)
        if voice_wav is not None:
            voice_id, state_, _, _, _ = await _clone(request, voice_wav)
            voice = Resolved(state_, voice_id, "cloned")
        else:
            voice = await _voice(voice_url)
        disposition = {
            "Content-Disposition": f"attachment; filename=generated_speech.{response_format}"
        }
        return await _speak(request, "tts", text, voice, options, response_format, [], disposition)

    # -- the work -------------------------------------------------------------------
    def _check_format(fmt: str) -> None:
        if fmt not in available_formats():
            have = ", ".join(available_formats())
            why = (
                "its encoder is missing here"
                if fmt in FORMATS
                else "not a format this server writes"
            )
            raise ApiError(
                400, f"response_format {fmt!r}: {why}; use one of {have}", "invalid_format"
            )

    def _options(**fields: Any) -> SpeakOptions:
        from pocketcli.options import OptionsError

        try:
            return SpeakOptions().with_(**fields)
        except OptionsError as exc:  # the request's fields are SpeakOptions' names
            raise ApiError(400, str(exc), "invalid_option") from None

    async def _voice(name: str | None) -> Resolved:
        _, voices, _ = state.ready()
        try:
            return await anyio.to_thread.run_sync(voices.resolve, name)
        except VoiceNotFound as exc:
            raise ApiError(400, str(exc), "voice_not_found") from None
        except Exception as exc:
            raise _as_api_error(exc, "voice") from None

    async def _run_first(request: Request, job: Job, scheduler: Scheduler) -> tuple[str, Any]:
        """Queues the job and waits for its first result, the client's departure or the
        deadline, whichever comes first."""
        try:
            scheduler.submit(job)
        except QueueFull as exc:
            raise ApiError(
                503, str(exc), "queue_full", {"Retry-After": str(exc.retry_after)}
            ) from None
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
            return first.result()
        first.cancel()
        if gone in done and gone.result().get("type") == "http.disconnect":
            job.cancel("disconnected")
            raise Cancelled("disconnected")
        job.cancel("deadline")
        raise ApiError(
            503,
            f"no result within the request's limit of {limits.request_seconds:g} s",
            "timeout",
            {"Retry-After": str(max(1, math.ceil(limits.request_seconds / 10)))},
        )

    async def _clone(
        request: Request, upload: UploadFile
    ) -> tuple[str, VoiceState, float, bool, list[str]]:
        """Clones an upload (or finds it cloned already): id, voice, seconds used,
        whether it was cached, notices."""
        from pocketcli.audio.read import read_audio_bytes
        from pocketcli.voices.prompt import MAX_PROMPT_SECONDS

        backend, voices, scheduler = state.ready()
        data = await upload.read(limits.max_upload_bytes + 1)
        if len(data) > limits.max_upload_bytes:
            raise ApiError(
                413,
                f"recording over the limit of {limits.max_upload_bytes} bytes",
                "upload_too_large",
            )
        voice_id = voices.clone_id(data)
        known = voices.cloned(voice_id)
        if known is not None:
            return voice_id, known, 0.0, True, []
        reason = backend.cloning_unavailable
        if reason is not None:
            raise ApiError(400, reason, "cloning_unavailable")
        name = _shown_name(upload.filename)
        try:
            decoded = await anyio.to_thread.run_sync(
                read_audio_bytes, data, name, MAX_PROMPT_SECONDS
            )
        except Exception as exc:
            raise _as_api_error(exc, "recording") from None
        if decoded.total_seconds > limits.max_clone_seconds:
            raise ApiError(
                400,
                f"{name} lasts {decoded.total_seconds:.1f} s; the server clones recordings of at "
                f"most {limits.max_clone_seconds:g} s (it uses the first {MAX_PROMPT_SECONDS:g} s)",
                "recording_too_long",
            )
        notes: list[str] = []
        if decoded.total_seconds > MAX_PROMPT_SECONDS:
            notes.append(f"only the first {MAX_PROMPT_SECONDS:g} s of {name} are used")
        job = Job(
            lambda: iter([backend.clone(decoded.samples, decoded.sample_rate, notes.append)]),
            time.monotonic() + limits.request_seconds,
            kind="clone",
        )
        try:
            kind, value = await _run_first(request, job, scheduler)
        except Cancelled:
            raise ApiError(499, "client went away", "disconnected") from None
        if kind == ERROR:
            raise _as_api_error(value, "recording")
        voices.keep_cloned(voice_id, value)
        log.info("voice cloned", extra={"voice": voice_id, "seconds": round(decoded.seconds, 2)})
        seconds = round(min(decoded.total_seconds, MAX_PROMPT_SECONDS), 3)
        return voice_id, value, seconds, False, notes

    async def _speak(
        request: Request,
        endpoint: str,
        text: str,
        voice: Resolved,
        options: SpeakOptions,
        fmt: str,
        notices: list[str],
        headers: dict[str, str],
    ) -> Response:
        backend, _, scheduler = state.ready()
        if not text.strip():
            raise ApiError(400, "input: the text is empty", "empty_text")
        if len(text) > limits.max_chars:
            raise ApiError(
                400,
                f"input: {len(text)} characters, over the limit of {limits.max_chars}",
                "text_too_long",
            )
        request_id = uuid.uuid4().hex[:16]
        warnings: list[str] = []
        job = Job(
            lambda: backend.frames(text, voice.state, options, on_warning=warnings.append),
            time.monotonic() + limits.request_seconds,
        )
        record = {
            "request_id": request_id,
            "endpoint": endpoint,
            "voice": voice.name,
            "chars": len(text),
            "format": fmt,
        }
        try:
            first = await _run_first(request, job, scheduler)
        except Cancelled:
            _finish(job, record, "disconnected", 0, status="499")
            return Response(status_code=499)
        except ApiError as exc:  # queue full, no result in time, shutting down
            _finish(job, record, exc.code, 0, exc.message)
            raise
        if first[0] == ERROR:
            error = _as_api_error(first[1], "text")
            _finish(job, record, "error", 0, error.message)
            raise error
        notices = [*notices, *warnings]  # the text's notices exist once the first frame does
        if notices:
            record["notices"] = notices
        out_headers = {
            "Cache-Control": "no-store",
            "X-Request-Id": request_id,
            "X-PocketTTS-Voice": voice.name,
            **headers,
        }
        if notices:
            out_headers[NOTICE_HEADER] = _header_text("; ".join(notices))
        encoder = StreamEncoder(fmt, backend.sample_rate)
        arrived = request.scope.get("state", {}).get(ARRIVED, job.accepted)
        return AudioStream(job, first, encoder, record, _finish, out_headers, arrived)

    def _finish(
        job: Job,
        record: dict,
        outcome: str,
        samples: int,
        error: str | None = None,
        status: str | None = None,
    ) -> None:
        """The request's log line and metrics. ``status``: the HTTP status to count
        (None when the error handler answers, and counts, it)."""
        m = state.metrics
        backend = state.backend
        m.outcomes.labels(outcome).inc()
        if status is not None:
            path = "/v1/audio/speech" if record["endpoint"] == "speech" else "/tts"
            m.requests.labels(path, status).inc()
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
        log.info("speech", extra=fields)

    return _with_middleware(app, settings)


def _with_middleware(app: FastAPI, settings: ServeSettings) -> FastAPI:
    # Added last = outermost: the key is checked before the body is read.
    app.add_middleware(BodyLimit, max_bytes=settings.limits.max_body_bytes)
    if settings.api_key:
        app.add_middleware(ApiKey, key=settings.api_key)
    if settings.cors_origins:  # outermost: a browser's preflight carries no key
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(settings.cors_origins),
            allow_methods=["GET", "POST", "DELETE"],
            allow_headers=["*"],
            expose_headers=["X-Request-Id", "X-PocketTTS-Voice", NOTICE_HEADER],
        )
    return app


class AudioStream(StreamingResponse):
    """Streams a job's frames; stops the job the moment the client goes away.

    Disconnects are watched whatever ASGI spec version the server speaks, and
    whatever ends the stream (end, client gone, deadline, shutdown) cancels
    the job and writes the request's log line once.
    """

    def __init__(
        self,
        job: Job,
        first: tuple[str, Any],
        encoder: StreamEncoder,
        record: dict,
        finish: Callable[..., None],
        headers: dict[str, str],
        arrived: float,
    ) -> None:
        self.job, self.encoder, self.record, self.finish = job, encoder, record, finish
        self.arrived = arrived
        self.outcome = "cancelled"  # what it stays if the server stops the stream (shutdown)
        self.samples = 0
        self.error: str | None = None
        super().__init__(self._body(first), media_type=encoder.media_type, headers=headers)

    async def _body(self, first: tuple[str, Any]) -> AsyncIterator[bytes]:
        kind, value = first
        while True:
            if kind == END:
                tail = self.encoder.finish()
                if tail:
                    yield tail
                self.outcome = "done"
                return
            if kind == ERROR:
                self.outcome = value.reason if isinstance(value, Cancelled) else "error"
                self.error = str(value)
                raise _Aborted()
            self.samples += value.size
            chunk = self.encoder.encode(value)
            if chunk:
                if "first_byte_s" not in self.record:
                    self.record["first_byte_s"] = round(time.monotonic() - self.arrived, 4)
                yield chunk
            kind, value = await self.job.next()

    async def __call__(self, scope, receive, send) -> None:  # type: ignore[override]
        try:
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
        finally:
            if self.outcome != "done":
                self.job.cancel(self.outcome)
            self.encoder.close()
            # A started stream was a 200, whatever ended it.
            self.finish(self.job, self.record, self.outcome, self.samples, self.error, "200")


class _Aborted(Exception):
    """Ends a stream without its final chunk, so the client sees it incomplete."""


def _header_text(text: str) -> str:
    """One line of printable ASCII (a header cannot carry more), at most 500 characters."""
    line = " ".join(text.split()).encode("ascii", "replace").decode()
    return line if len(line) <= 500 else line[:497] + "..."


def _model(model_id: str) -> dict[str, Any]:
    return {"id": model_id, "object": "model", "created": 0, "owned_by": "pockettts"}


def _shown_name(filename: str | None) -> str:
    """The upload's own name, for messages only (never used as a path)."""
    name = (filename or "recording").replace("\\", "/").rsplit("/", 1)[-1]
    return "upload " + repr(name[:80] or "recording")


def _as_api_error(exc: BaseException, what: str) -> ApiError:
    from pocketcli.errors import UserError
    from pocketcli.normalize import MarkupError
    from pocketcli.options import OptionsError
    from pocketcli.text import EmptyTextError

    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, Cancelled):
        return ApiError(503, f"stopped: {exc.reason}", exc.reason)
    if isinstance(exc, MarkupError | EmptyTextError | OptionsError | UserError):
        return ApiError(400, str(exc), f"invalid_{what}")
    logs.logger().error("internal error", exc_info=exc)
    return ApiError(500, f"internal error ({type(exc).__name__}); see the server's log", "internal")
