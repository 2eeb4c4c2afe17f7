"""Many Wyoming connections at once and a connection that goes away, with the real
``wyoming`` client library: 60 connections against ``--max-streams 2`` get ``busy``
beyond the streams and the queue, and a connection closed mid-synthesis frees its
stream at once (its generation stops; a later synthesis is admitted)."""

from __future__ import annotations

import asyncio
import time

import pytest

pytest.importorskip("wyoming")

from wyoming.client import AsyncClient  # noqa: E402
from wyoming.tts import Synthesize  # noqa: E402

from tests.serve.test_wyoming import until  # noqa: E402
from tests.support.protohelp import TINY_ARGS, run_async, spawn  # noqa: E402

LONG = "This sentence keeps the model busy for a while. " * 80  # under --max-chars


async def _answer(uri: str, text: str) -> str:
    """``busy``, ``spoken`` or another error's code, for one synthesis on its own
    connection."""
    async with AsyncClient.from_uri(uri) as client:
        await client.write_event(Synthesize(text=text).event())
        while True:
            event = await client.read_event()
            assert event is not None
            if event.type == "error":
                return event.data.get("code", "error")
            if event.type == "audio-chunk":
                return "spoken"  # admitted: enough (the connection closes, so does it)


def test_sixty_connections_against_two_streams_hear_busy_beyond_the_queue() -> None:
    args = ("wyoming", "--uri", "tcp://127.0.0.1:0", *TINY_ARGS)
    with spawn(*args, "--max-streams", "2", "--max-queue", "2") as (_, err):
        uri = err.wait_event("listening")["uri"]

        async def go() -> list[str]:
            return list(await asyncio.gather(*(_answer(uri, LONG) for _ in range(60))))

        answers = run_async(go())
    assert set(answers) <= {"busy", "spoken"}, answers
    # At most the streams and the queue are admitted while the others ask; a connection
    # that closes frees its stream, so a few more may get in as the first ones leave.
    assert answers.count("busy") >= 60 - 2 * (2 + 2), answers.count("spoken")


def test_a_connection_closed_mid_synthesis_frees_its_stream_at_once() -> None:
    args = ("wyoming", "--uri", "tcp://127.0.0.1:0", *TINY_ARGS)
    with spawn(*args, "--max-streams", "1", "--max-queue", "0") as (_, err):
        uri = err.wait_event("listening")["uri"]

        async def go() -> float:
            async with AsyncClient.from_uri(uri) as client:
                await client.write_event(Synthesize(text=LONG).event())
                await until(client, "audio-chunk")  # speaking now: the one stream is taken
            closed = time.monotonic()
            # LONG takes minutes to speak here: held to its end, the stream stays taken.
            while (answer := await _answer(uri, "Me now.")) == "busy":
                assert time.monotonic() - closed < 10, "the stream was never freed"
                await asyncio.sleep(0.05)
            assert answer == "spoken"
            return time.monotonic() - closed

        freed = run_async(go())
    assert freed < 10
