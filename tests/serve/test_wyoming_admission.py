"""`pockettts wyoming` takes its syntheses through the same admission as `serve`:
--max-streams and --max-queue bound them, and past them a client hears Wyoming's
``error`` event "busy" (issue 31: 60 connections once synthesized at once)."""

from __future__ import annotations

import pytest

pytest.importorskip("wyoming")

from wyoming.client import AsyncClient  # noqa: E402
from wyoming.error import Error  # noqa: E402
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeStop  # noqa: E402

from tests.serve.test_wyoming import until  # noqa: E402
from tests.support.protohelp import TINY_ARGS, run_async, spawn  # noqa: E402


def test_syntheses_past_the_streams_and_the_queue_hear_busy() -> None:
    args = ("wyoming", "--uri", "tcp://127.0.0.1:0", *TINY_ARGS)
    with spawn(*args, "--max-streams", "1", "--max-queue", "0") as (proc, err):
        uri = err.wait_event("listening")["uri"]

        async def go() -> tuple[Error, list[str]]:
            async with AsyncClient.from_uri(uri) as holder, AsyncClient.from_uri(uri) as other:
                # A streamed synthesis holds the one stream while its text arrives.
                await holder.write_event(SynthesizeStart().event())
                await holder.write_event(SynthesizeChunk(text="Hello there. ").event())
                await until(holder, "audio-chunk")
                await other.write_event(Synthesize(text="Me too.").event())
                refused = Error.from_event((await until(other, "error"))[-1])
                await holder.write_event(SynthesizeStop().event())
                await until(holder, "synthesize-stopped")
                # The stream is free again: the same request is spoken now.
                await other.write_event(Synthesize(text="Me too.").event())
                kinds = [e.type for e in await until(other, "audio-stop")]
                return refused, kinds

        refused, kinds = run_async(go())
    assert refused.code == "busy" and "busy" in (refused.text or "")
    assert "audio-chunk" in kinds


def test_the_limit_flags_have_the_servers_maxima() -> None:
    from tests.support.cli import run

    for flag, value in (
        ("--max-streams", "257"),
        ("--max-queue", "1001"),
        ("--request-timeout", "86401"),
    ):
        result = run("wyoming", flag, value, text=True)
        assert result.returncode == 2 and flag in result.stderr, result.stderr
