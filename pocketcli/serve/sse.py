"""OpenAI's ``stream_format: "sse"`` for ``POST /v1/audio/speech``: the audio as events.

The body is ``text/event-stream``: one ``speech.audio.delta`` event per piece
of encoded audio as it is made (base64 of the requested ``response_format``'s
bytes, the very bytes ``stream_format: "audio"`` would send, so the deltas
joined are that file), then one ``speech.audio.done`` with ``usage``
(``input_tokens``: characters of the input, ``output_tokens``: audio frames
made, 80 ms each). A failure after the first event is an ``error`` event
(OpenAI's error object), and the stream then ends as a complete response.
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Callable

MEDIA_TYPE = "text/event-stream"


def event(payload: dict) -> bytes:
    return f"data: {json.dumps(payload, separators=(',', ':'))}\n\n".encode()


class SpeechEvents:
    """Wraps a speech response's audio bytes into OpenAI's speech events."""

    media_type = MEDIA_TYPE

    def __init__(self, input_chars: int) -> None:
        self.input_chars = input_chars

    async def wrap(
        self,
        audio: AsyncIterator[bytes],
        frames: Callable[[], int],
        failure: Callable[[], str | None],
    ) -> AsyncIterator[bytes]:
        try:
            async for chunk in audio:
                yield event(
                    {"type": "speech.audio.delta", "audio": base64.b64encode(chunk).decode()}
                )
        except Exception:  # the audio stream stopped on an error: say so, end cleanly
            message = failure() or "the speech stopped"
            yield event(
                {
                    "type": "error",
                    "error": {"message": message, "type": "server_error", "code": "stopped"},
                }
            )
            return
        made = frames()
        usage = {
            "input_tokens": self.input_chars,
            "output_tokens": made,
            "total_tokens": self.input_chars + made,
        }
        yield event({"type": "speech.audio.done", "usage": usage})
