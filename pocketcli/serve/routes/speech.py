"""OpenAI's API: ``POST /v1/audio/speech`` and ``/v1/models``."""

from __future__ import annotations

import math
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from pocketcli.audio.stretch import MAX_SPEED, MIN_SPEED
from pocketcli.frontends.encoding import available_formats
from pocketcli.options import SEED_BOUNDS
from pocketcli.serve import fields
from pocketcli.serve.apierrors import ApiError
from pocketcli.serve.sse import SpeechEvents
from pocketcli.serve.state import Ready
from pocketcli.serve.streaming import ParsedSpeech, speak
from pocketcli.serve.timedbody import TimedBody

# Ids OpenAI clients send, all served by the one loaded model.
MODEL_IDS = ("pockettts", "pocket-tts", "tts-1", "tts-1-hd", "gpt-4o-mini-tts")

NON_BLANK = {"minLength": 1, "pattern": r"\S"}  # maxLength: the server's --max-chars
FORMAT_ENUM = {"enum": list(available_formats())}

router = APIRouter()


class VoiceRef(BaseModel):
    id: str


class SpeechRequest(BaseModel):
    """OpenAI's ``POST /v1/audio/speech`` body, plus ``seed``, ``temperature`` and ``words``."""

    model_config = ConfigDict(extra="ignore")

    # The rules below are documented (``json_schema_extra``) and checked by the route,
    # whose messages say more than a generic validation error.
    model: str = Field(json_schema_extra={"enum": list(MODEL_IDS)})
    input: str = Field(json_schema_extra=NON_BLANK)
    voice: str | VoiceRef | None = None
    response_format: str | None = Field(None, json_schema_extra=FORMAT_ENUM)
    speed: float = Field(1.0, json_schema_extra={"minimum": MIN_SPEED, "maximum": MAX_SPEED})
    instructions: str | None = None
    stream_format: str | None = Field(None, json_schema_extra={"enum": ["audio", "sse"]})
    seed: int | None = Field(None, json_schema_extra=SEED_BOUNDS)
    temperature: float | None = Field(None, json_schema_extra={"minimum": 0, "maximum": 10})
    words: bool = Field(
        False,
        description="Word timings: speech.word events with stream_format sse, else a JSON"
        " body with the audio (base64) and the words",
    )


def _model(model_id: str) -> dict[str, Any]:
    return {"id": model_id, "object": "model", "created": 0, "owned_by": "pockettts"}


@router.get("/v1/models")
async def models() -> dict[str, Any]:
    return {"object": "list", "data": [_model(m) for m in MODEL_IDS]}


@router.get("/v1/models/{model_id}")
async def model(model_id: str) -> dict[str, Any]:
    if model_id not in MODEL_IDS:
        shown = model_id if len(model_id) <= 80 else model_id[:77] + "..."
        raise ApiError(
            404, f"no model {shown!r}; models: {', '.join(MODEL_IDS)}", "model_not_found"
        )
    return _model(model_id)


def stream_format(body: SpeechRequest) -> str:
    """``audio`` or ``sse`` in any case (as ``response_format`` takes ``WAV``)."""
    return (body.stream_format or "audio").strip().lower()


def speech_fields(body: SpeechRequest) -> tuple[str, list[str]]:
    """The checked format and the notices of a speech request's fields."""
    if body.model not in MODEL_IDS:
        raise ApiError(
            400,
            f"unknown model {body.model[:80]!r}; use one of {', '.join(MODEL_IDS)}",
            "model_not_found",
            param="model",
        )
    fmt = fields.response_format(
        body.response_format, "mp3" if "mp3" in available_formats() else "wav"
    )
    if stream_format(body) not in ("audio", "sse"):
        raise ApiError(
            400,
            "stream_format: 'audio' (bytes as they are made) or 'sse' (events)",
            "invalid_stream_format",
            param="stream_format",
        )
    if not MIN_SPEED <= body.speed <= MAX_SPEED or not math.isfinite(body.speed):
        raise ApiError(
            400, f"speed must be from {MIN_SPEED} to {MAX_SPEED}", "invalid_speed", param="speed"
        )
    return fmt, []


@router.post("/v1/audio/speech", response_class=StreamingResponse)
async def speech(body: SpeechRequest, request: Request, loaded: Ready) -> StreamingResponse:
    fmt, notices = speech_fields(body)
    words = fields.words(loaded, body.words)
    options = fields.speak_options(
        seed=body.seed, temperature=body.temperature, speed=body.speed, words=words
    )
    voice_name = body.voice.id if isinstance(body.voice, VoiceRef) else body.voice
    voice = await fields.voice(loaded, voice_name)
    said = ParsedSpeech("speech", body.input, voice, options, fmt, notices)
    if stream_format(body) == "sse":
        said.shape = SpeechEvents(len(body.input))
    elif words:  # not streamed: the audio and its words in one JSON body
        said.shape = TimedBody(fmt)
    return await speak(request, loaded, said)
