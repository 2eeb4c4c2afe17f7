"""Voices: the list, cloning an uploaded recording, forgetting a cloned voice.

A recording is decoded and cloned as one job of the scheduler, so at most as
many uploads as the queue holds are in memory, one is decoded at a time, and
its decoded size is bounded (samples, rate and channels are checked from the
header before anything is decoded).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

import anyio
from fastapi import APIRouter, File, Request, UploadFile

from pocketcli.frontends import logs
from pocketcli.frontends.admission import ERROR, Cancelled, ModelJob
from pocketcli.serve.apierrors import ApiError, as_api_error
from pocketcli.serve.state import Loaded, Ready
from pocketcli.serve.streaming import run_first

if TYPE_CHECKING:
    from pocketcli.voices.state import VoiceState

router = APIRouter()


@dataclass(frozen=True)
class Clone:
    """A cloned upload: its id, the voice, the recording's seconds used, notices."""

    voice_id: str
    state: VoiceState
    seconds: float
    cached: bool
    notices: list[str]


@router.get("/v1/voices")
async def list_voices(loaded: Ready) -> dict[str, Any]:
    listing = await anyio.to_thread.run_sync(loaded.voices.listing)
    return {"object": "list", "data": listing}


@router.post("/v1/voices")
async def add_voice(
    request: Request, loaded: Ready, file: Annotated[UploadFile, File()]
) -> dict[str, Any]:
    clone = await clone_upload(request, loaded, file)
    return {
        "id": clone.voice_id,
        "object": "voice",
        "seconds": clone.seconds,
        "cached": clone.cached,
        "notices": clone.notices,
    }


@router.delete("/v1/voices/{voice_id}")
async def delete_voice(voice_id: str, loaded: Ready) -> dict[str, Any]:
    # on a thread: under Ray Serve the shelf of cloned voices is another process
    if not await anyio.to_thread.run_sync(loaded.voices.forget_cloned, voice_id):
        shown = voice_id if len(voice_id) <= 80 else voice_id[:77] + "..."
        raise ApiError(404, f"no cloned voice {shown!r}", "voice_not_found")
    return {"id": voice_id, "object": "voice", "deleted": True}


async def clone_upload(request: Request, loaded: Loaded, upload: UploadFile) -> Clone:
    """Clones an upload, or finds it cloned already (same bytes, same id)."""
    limits = loaded.settings.limits
    data = await upload.read(limits.max_upload_bytes + 1)
    if len(data) > limits.max_upload_bytes:
        raise ApiError(
            413, f"recording over the limit of {limits.max_upload_bytes} bytes", "upload_too_large"
        )
    voice_id = loaded.voices.clone_id(data)
    known = await anyio.to_thread.run_sync(loaded.voices.cloned, voice_id)
    if known is not None:
        return Clone(voice_id, known.state, known.seconds, True, [])
    reason = loaded.backend.cloning_unavailable
    if reason is not None:
        raise ApiError(400, reason, "cloning_unavailable")
    name = _shown_name(upload.filename)
    notes: list[str] = []
    job = ModelJob(
        lambda: iter([_decode_and_clone(loaded, data, name, notes)]),
        time.monotonic() + limits.request_seconds,
        kind="clone",
    )
    try:
        kind, value = await run_first(request, job, loaded)
    except Cancelled:
        raise ApiError(499, "client went away", "disconnected") from None
    if kind == ERROR:
        raise as_api_error(value, "recording")
    state, seconds = value
    await anyio.to_thread.run_sync(loaded.voices.keep_cloned, voice_id, state, seconds)
    logs.logger().info("voice cloned", extra={"voice": voice_id, "seconds": seconds})
    return Clone(voice_id, state, seconds, False, notes)


def _decode_and_clone(
    loaded: Loaded, data: bytes, name: str, notes: list[str]
) -> tuple[VoiceState, float]:
    """On the scheduler's thread: decode (bounded), check the length, clone."""
    from pocketcli.audio.read import read_audio_bytes
    from pocketcli.voices.prompt import MAX_PROMPT_SECONDS

    limits = loaded.settings.limits
    decoded = read_audio_bytes(data, name, MAX_PROMPT_SECONDS, limits.max_decoded_samples)
    if decoded.total_seconds > limits.max_clone_seconds:
        raise ApiError(
            400,
            f"{name} lasts {decoded.total_seconds:.1f} s; the server clones recordings of at "
            f"most {limits.max_clone_seconds:g} s (it uses the first {MAX_PROMPT_SECONDS:g} s)",
            "recording_too_long",
        )
    if decoded.total_seconds > MAX_PROMPT_SECONDS:
        notes.append(f"only the first {MAX_PROMPT_SECONDS:g} s of {name} are used")
    state = loaded.backend.clone(decoded.samples, decoded.sample_rate, notes.append)
    return state, round(min(decoded.total_seconds, MAX_PROMPT_SECONDS), 3)


def _shown_name(filename: str | None) -> str:
    """The upload's own name, for messages only (never used as a path)."""
    name = (filename or "recording").replace("\\", "/").rsplit("/", 1)[-1]
    return "upload " + repr(name[:80] or "recording")
