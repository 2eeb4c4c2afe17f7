"""A speech request's answer with its words (``"words": true`` without streaming): one
JSON body, ``{"audio": <base64 of the response_format's file>, "format": ..., "words":
[{"word", "start", "end"}, ...]}``; the audio is the very bytes the plain answer sends."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Callable, Sequence

from pocketcli.words.align import Word
from pocketcli.words.captions import word_row


class TimedBody:
    """Gathers a speech's bytes and words and sends them as one JSON object at the end
    (bounded as the audio is: by the request's ``max_chars``)."""

    media_type = "application/json"
    front = "http"

    def __init__(self, fmt: str) -> None:
        self.fmt = fmt

    async def wrap(
        self,
        pieces: AsyncIterator[tuple[bytes, Sequence[Word]]],
        frames: Callable[[], int],
        failure: Callable[[], str | None],
    ) -> AsyncIterator[bytes]:
        audio = bytearray()
        words: list[dict[str, str | float]] = []
        async for chunk, ended in pieces:  # a failure ends the response incomplete
            audio += chunk
            words.extend(word_row(w) for w in ended)
        body = {"audio": base64.b64encode(bytes(audio)).decode(), "format": self.fmt}
        yield json.dumps({**body, "words": words}, ensure_ascii=False).encode()
