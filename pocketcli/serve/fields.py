"""Request fields every front end reads the same way: format, options, voice name."""

from __future__ import annotations

from typing import Any

import anyio

from pocketcli.frontends.encoding import FORMATS, available_formats
from pocketcli.frontends.voices import Resolved, VoiceNotFound, VoiceUnreadable
from pocketcli.options import SpeakOptions
from pocketcli.serve.apierrors import ApiError, as_api_error, redact_paths
from pocketcli.serve.state import Loaded


def response_format(given: str | None, default: str) -> str:
    """The format asked for (any case: ``WAV`` is ``wav``), one this server writes."""
    fmt = (given or default).strip().lower()
    if fmt not in available_formats():
        have = ", ".join(available_formats())
        why = "its encoder is missing here" if fmt in FORMATS else "not a format this server writes"
        shown = (given or default)[:40]
        raise ApiError(
            400,
            f"response_format {shown!r}: {why}; use one of {have}",
            "invalid_format",
            param="response_format",
        )
    return fmt


def speak_options(**fields: Any) -> SpeakOptions:
    """``SpeakOptions`` from a request's fields (seed, temperature: the options' own names)."""
    try:
        return SpeakOptions().with_(**fields)
    except Exception as exc:
        raise as_api_error(exc, "option") from None


def words(loaded: Loaded, asked: bool) -> bool:
    """Whether a request asks for word timings: refused (400, ``words_unavailable``) when
    this model cannot give them, before any audio."""
    if not asked:
        return False
    why = loaded.backend.words_unavailable
    if why is not None:
        raise ApiError(400, f"words: {redact_paths(why)}", "words_unavailable", param="words")
    return True


async def voice(loaded: Loaded, name: str | None) -> Resolved:
    """The voice a request names (see ``frontends.voices``), loaded on a worker thread."""
    try:
        return await anyio.to_thread.run_sync(loaded.voices.resolve, name)
    except VoiceNotFound as exc:
        raise ApiError(400, str(exc), "voice_not_found", param="voice") from None
    except VoiceUnreadable as exc:
        raise ApiError(500, str(exc), "voice_unreadable") from None
    except Exception as exc:
        raise as_api_error(exc, "voice") from None
