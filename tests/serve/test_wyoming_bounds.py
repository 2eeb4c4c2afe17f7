"""`pockettts wyoming`'s bounds at exactly their value: an event of exactly 1 MB (data and
payload) is read and one byte more is refused before it is read; a synthesis of exactly
--max-chars is spoken and one character more is an error event. Raw bytes on TCP for the
event's size (the wyoming client would not send a malformed length), the wyoming
package's own client for the rest."""

from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("wyoming")

from wyoming.client import AsyncClient  # noqa: E402
from wyoming.tts import Synthesize  # noqa: E402

from tests.support.protohelp import TINY_ARGS, run_async, spawn  # noqa: E402

EVENT_LIMIT = 1 << 20  # README: "an event's data and payload up to 1 MB"
MAX_CHARS = 20


@pytest.fixture(scope="module")
def uri():
    args = ("wyoming", "--uri", "tcp://127.0.0.1:0", *TINY_ARGS, "--max-chars", str(MAX_CHARS))
    with spawn(*args) as (_, err):
        yield err.wait_event("listening")["uri"]


async def _describe_with_data(uri: str, size: int) -> list[str]:
    """A describe event whose data is exactly ``size`` bytes: the types of what comes back
    until an info, an error or the end of the connection."""
    host, port = uri.removeprefix("tcp://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port), limit=2**22)
    data = b'{"x": "' + b"a" * (size - 9) + b'"}'
    assert len(data) == size
    writer.write(json.dumps({"type": "describe", "data_length": size}).encode() + b"\n" + data)
    await writer.drain()
    seen = []
    while True:
        line = await reader.readline()
        if not line:
            break
        header = json.loads(line)
        for key in ("data_length", "payload_length"):
            if header.get(key):
                await reader.readexactly(header[key])
        seen.append(header["type"])
        if header["type"] in ("info", "error"):
            break
    writer.close()
    return seen


@pytest.mark.parametrize(
    ("size", "answer"),
    [(EVENT_LIMIT - 1, "info"), (EVENT_LIMIT, "info"), (EVENT_LIMIT + 1, None)],
    ids=["under", "at", "over"],
)
def test_an_event_of_exactly_the_limit_is_read(uri, size, answer) -> None:
    seen = run_async(_describe_with_data(uri, size))
    if answer == "info":
        assert seen[-1:] == ["info"], seen
    else:
        assert "info" not in seen, seen


@pytest.mark.parametrize(
    ("chars", "spoken"), [(MAX_CHARS - 1, True), (MAX_CHARS, True), (MAX_CHARS + 1, False)]
)
def test_a_synthesis_of_exactly_max_chars_is_spoken(uri, chars, spoken) -> None:
    text = ("Hello there, you. " * 5)[:chars]

    async def go() -> str:
        async with AsyncClient.from_uri(uri) as client:
            await client.write_event(Synthesize(text).event())
            while True:
                event = await client.read_event()
                assert event is not None
                if event.type in ("audio-stop", "error"):
                    return event.type

    assert run_async(go()) == ("audio-stop" if spoken else "error")
