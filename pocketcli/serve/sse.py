"""OpenAI's ``stream_format: "sse"`` for ``POST /v1/audio/speech``: the audio as events.

The body is ``text/event-stream``: one ``speech.audio.delta`` event per piece
of encoded audio as it is made (base64 of the requested ``response_format``'s
bytes, the very bytes ``stream_format: "audio"`` would send, so the deltas
joined are that file), then one ``speech.audio.done`` with ``usage``
(``input_tokens``: characters of the input, ``output_tokens``: audio frames
made, 80 ms each). A failure after the first event is an ``error`` event
(OpenAI's error object), and the stream then ends as a complete response.

With ``"words": true`` (our extension) each word is a ``speech.word`` event
(``word``, ``start``, ``end``: seconds from the start of the audio, to the ms),
sent after the delta that carries the audio ending it (an encoder that holds
its bytes back, FLAC and MP3, holds the words with them).
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Callable, Sequence

from pocketcli.words.align import Word
from pocketcli.words.captions import word_row

MEDIA_TYPE = "text/event-stream"


def event(payload: dict) -> bytes:
    return f"data: {json.dumps(payload, separators=(',', ':'))}\n\n".encode()


class SpeechEvents:
    """Wraps a speech response's audio bytes into OpenAI's speech events."""

    media_type = MEDIA_TYPE
    front = "sse"

    def __init__(self, input_chars: int) -> None:
        self.input_chars = input_chars

    async def wrap(
        self,
        pieces: AsyncIterator[tuple[bytes, Sequence[Word]]],
        frames: Callable[[], int],
        failure: Callable[[], str | None],
    ) -> AsyncIterator[bytes]:
        """The events of ``pieces`` (each frame's bytes, maybe none yet, and the words it
        ends); ``frames``: how many were made, ``failure``: why they stopped, if they did."""
        held: list[Word] = []  # ended by audio the encoder has not given out yet
        try:
            async for chunk, words in pieces:
                held.extend(words)
                if not chunk:
                    continue
                yield event(
                    {"type": "speech.audio.delta", "audio": base64.b64encode(chunk).decode()}
                )
                for word in held:
                    yield event({"type": "speech.word", **word_row(word)})
                held.clear()
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
