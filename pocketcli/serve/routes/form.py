"""pocket-tts serve's form endpoint, ``POST /tts`` (text, voice_url or voice_wav; ``words``:
the audio and its word timings as one JSON body, ``timedbody``)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, File, Form, Request, UploadFile
from fastapi.responses import StreamingResponse

from pocketcli.frontends.voices import Resolved
from pocketcli.options import SEED_BOUNDS
from pocketcli.serve import fields
from pocketcli.serve.apierrors import ApiError
from pocketcli.serve.routes.speech import FORMAT_ENUM, NON_BLANK
from pocketcli.serve.routes.voices import clone_upload
from pocketcli.serve.state import Ready
from pocketcli.serve.streaming import ParsedSpeech, speak
from pocketcli.serve.timedbody import TimedBody

router = APIRouter()


@router.post("/tts", response_class=StreamingResponse)
async def tts_form(
    request: Request,
    loaded: Ready,
    text: Annotated[str, Form(json_schema_extra=NON_BLANK)],
    voice_url: Annotated[str | None, Form()] = None,
    voice_wav: Annotated[UploadFile | None, File()] = None,
    seed: Annotated[int | None, Form(json_schema_extra=SEED_BOUNDS)] = None,
    temperature: Annotated[
        float | None, Form(json_schema_extra={"minimum": 0, "maximum": 10})
    ] = None,
    response_format: Annotated[str, Form(json_schema_extra=FORMAT_ENUM)] = "wav",
    words: Annotated[bool, Form(description="JSON: the audio (base64) and its words")] = False,
) -> StreamingResponse:
    if not text.strip():
        raise ApiError(400, "Text cannot be empty", "empty_text", param="text")
    if voice_url is not None and voice_wav is not None:
        raise ApiError(400, "Cannot provide both voice_url and voice_wav", "voice_conflict")
    fmt = fields.response_format(response_format, "wav")
    timed = fields.words(loaded, words)
    options = fields.speak_options(seed=seed, temperature=temperature, words=timed)
    if voice_wav is not None:
        clone = await clone_upload(request, loaded, voice_wav)
        voice = Resolved(clone.state, clone.voice_id, "cloned")
    else:
        voice = await fields.voice(loaded, voice_url)
    if timed:  # the audio and its words as one JSON body
        said = ParsedSpeech("tts", text, voice, options, fmt, shape=TimedBody(fmt))
    else:
        disposition = {"Content-Disposition": f"attachment; filename=generated_speech.{fmt}"}
        said = ParsedSpeech("tts", text, voice, options, fmt, [], disposition)
    return await speak(request, loaded, said)
