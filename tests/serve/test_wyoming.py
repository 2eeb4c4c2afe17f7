"""`pockettts wyoming` with the `wyoming` package's own AsyncClient, as Home Assistant
talks to it: describe, synthesize, streaming synthesis, errors, several clients,
tcp/unix/stdio, SIGTERM, and the missing extra."""

from __future__ import annotations

import asyncio
import shutil
import signal
import subprocess

import pytest

pytest.importorskip("wyoming")

from wyoming.audio import AudioChunk, AudioStart  # noqa: E402
from wyoming.client import AsyncClient  # noqa: E402
from wyoming.error import Error  # noqa: E402
from wyoming.event import Event, read_event, write_event  # noqa: E402
from wyoming.info import Describe, Info  # noqa: E402
from wyoming.tts import (  # noqa: E402
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeStopped,
    SynthesizeVoice,
)

from tests.support.cli import SCRIPT  # noqa: E402
from tests.support.protohelp import TINY_ARGS, VOICE, one_line, run_async, spawn, without_module  # noqa: E402

FRAME = 1920  # samples per frame of the model (80 ms at 24 kHz)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One server on tcp://127.0.0.1:<free port>, with a --voice-dir voice "bob"."""
    voices = tmp_path_factory.mktemp("voices")
    shutil.copy(VOICE, voices / "bob.safetensors")
    args = ("wyoming", "--uri", "tcp://127.0.0.1:0", *TINY_ARGS, "--voice-dir", str(voices))
    with spawn(*args, "--max-chars", "300") as (proc, err):
        yield err.wait_event("listening")["uri"], proc, err


async def until(client: AsyncClient, *types: str) -> list[Event]:
    """Events up to and including the first of ``types``."""
    got = []
    while True:
        event = await client.read_event()
        assert event is not None, f"connection closed after {[e.type for e in got]}"
        got.append(event)
        if event.type in types:
            return got


def audio_of(events: list[Event]) -> tuple[AudioStart, list[AudioChunk]]:
    kinds = [e.type for e in events]
    assert kinds[0] == "audio-start" and "audio-stop" in kinds, kinds
    start = AudioStart.from_event(events[0])
    chunks = [AudioChunk.from_event(e) for e in events if AudioChunk.is_type(e.type)]
    return start, chunks


def test_describe_lists_every_voice_with_its_language_and_streaming(server) -> None:
    uri, _, _ = server

    async def go() -> Info:
        async with AsyncClient.from_uri(uri) as client:
            await client.write_event(Describe().event())
            return Info.from_event((await until(client, "info"))[-1])

    info = run_async(go())
    (program,) = info.tts
    assert program.supports_synthesize_streaming is True
    names = {v.name: v.languages for v in program.voices}
    assert names == {"voice": ["en"], "bob": ["en"]}, names


def test_synthesize_by_voice_name_streams_a_chunk_per_frame(server) -> None:
    uri, _, _ = server

    async def go(voice: str | None) -> list[Event]:
        async with AsyncClient.from_uri(uri) as client:
            named = SynthesizeVoice(name=voice) if voice else None
            await client.write_event(Synthesize("Hello there. How are you?", named).event())
            return await until(client, "audio-stop")

    for voice in ("bob", None):
        start, chunks = audio_of(run_async(go(voice)))
        assert (start.rate, start.width, start.channels) == (24000, 2, 1)
        assert len(chunks) > 2  # frame by frame, not one blob at the end
        assert all(len(c.audio) == FRAME * 2 for c in chunks)
        assert all((c.rate, c.width, c.channels) == (24000, 2, 1) for c in chunks)


def test_streaming_synthesis_speaks_the_first_sentence_before_the_rest_is_sent(server) -> None:
    uri, _, _ = server

    async def go() -> tuple[list[Event], list[Event]]:
        async with AsyncClient.from_uri(uri) as client:
            await client.write_event(SynthesizeStart(SynthesizeVoice(name="bob")).event())
            # Home Assistant also sends the whole text for servers that cannot stream.
            await client.write_event(Synthesize("ignored when streaming").event())
            await client.write_event(SynthesizeChunk("Hello there. How").event())
            # Audio for the complete sentence comes while the next is unfinished.
            first = await until(client, "audio-chunk")
            for piece in (" are", " you", " today?"):
                await client.write_event(SynthesizeChunk(piece).event())
            await client.write_event(SynthesizeStop().event())
            return first, await until(client, "synthesize-stopped")

    first, rest = run_async(go())
    assert [e.type for e in first] == ["audio-start", "audio-chunk"]
    kinds = [e.type for e in rest]
    assert kinds[-2:] == ["audio-stop", "synthesize-stopped"], kinds
    assert kinds.count("audio-start") == 0 and kinds.count("audio-chunk") > 2
    assert SynthesizeStopped.is_type(rest[-1].type)


def test_bad_requests_get_an_error_event_and_the_connection_keeps_serving(server) -> None:
    uri, _, err = server

    async def go() -> list[tuple[str, str | None]]:
        seen = []
        async with AsyncClient.from_uri(uri) as client:
            for event in (
                Synthesize("Hi.", SynthesizeVoice(name="../../etc/passwd")).event(),
                Synthesize("   ").event(),
                Synthesize("word " * 100).event(),  # 500 characters, over --max-chars 300
                SynthesizeChunk("no start").event(),
                SynthesizeStop().event(),
                Event(type="synthesize", data={}),  # no text at all
            ):
                await client.write_event(event)
                error = Error.from_event((await until(client, "error"))[-1])
                seen.append((error.code, error.text))
            await client.write_event(SynthesizeStart().event())
            await client.write_event(SynthesizeChunk("word " * 70).event())
            error = Error.from_event((await until(client, "error"))[-1])
            seen.append((error.code, error.text))
            await client.write_event(Describe().event())
            assert (await until(client, "info"))[-1].type == "info"
        return seen

    seen = run_async(go())
    codes = [code for code, _ in seen]
    assert codes == [
        "voice_not_found",
        "empty_text",
        "text_too_long",
        "not_streaming",
        "not_streaming",
        "bad_request",
        "text_too_long",
    ], seen
    assert "reads no path" in seen[0][1]
    assert "Traceback" not in err.text()


def test_an_event_over_the_size_limit_is_refused_before_it_is_read(server) -> None:
    uri, _, _ = server

    async def go() -> Event | None:
        async with AsyncClient.from_uri(uri) as client:
            assert client._writer is not None
            client._writer.write(b'{"type": "synthesize", "payload_length": 100000000}\n')
            await client._writer.drain()
            error = (await until(client, "error"))[-1]
            assert Error.from_event(error).code == "bad_event"
            return await client.read_event()  # then the server hangs up

    assert run_async(go()) is None


@pytest.mark.parametrize(
    "raw",
    [
        b"[" * 5000 + b"]" * 5000 + b"\n",  # a 10 kB header, far under the line bound
        b'{"type": "synthesize", "data_length": 10000}\n' + b"[" * 5000 + b"]" * 5000,
    ],
    ids=["header", "data"],
)
def test_json_nested_past_the_parsers_depth_is_a_bad_event_and_the_server_serves_on(
    server, raw
) -> None:
    """A hostile sweep's find: Python's JSON parser gives up past ~1000 levels with an
    error that is no ValueError; it must still be the bad_event answer, not a dropped
    connection and asyncio's "Unhandled exception" in the log."""
    uri, _, err = server

    async def go() -> tuple[str, str]:
        async with AsyncClient.from_uri(uri) as client:
            assert client._writer is not None
            client._writer.write(raw)
            await client._writer.drain()
            error = Error.from_event((await until(client, "error"))[-1])
        async with AsyncClient.from_uri(uri) as client:  # the server serves on
            await client.write_event(Describe().event())
            assert (await until(client, "info"))[-1].type == "info"
        return error.code or "", error.text

    code, text = run_async(go())
    assert code == "bad_event" and "nested too deeply" in text, text
    assert "Unhandled" not in err.text() and "RecursionError" not in err.text()


def test_several_clients_at_once_each_get_their_whole_audio(server) -> None:
    uri, _, _ = server

    async def one(text: str) -> int:
        async with AsyncClient.from_uri(uri) as client:
            await client.write_event(Synthesize(text).event())
            _, chunks = audio_of(await until(client, "audio-stop"))
            return len(chunks)

    async def go() -> list[int]:
        return await asyncio.gather(*(one(f"Client number {i} speaks.") for i in range(3)))

    assert all(n > 2 for n in run_async(go()))


def test_unix_socket_and_idle_clients(tmp_path) -> None:
    path = tmp_path / "tts.sock"
    args = ("wyoming", "--uri", f"unix://{path}", *TINY_ARGS, "--idle-timeout", "1")
    with spawn(*args) as (proc, err):
        assert err.wait_event("listening")["uri"] == f"unix://{path}"

        async def go() -> tuple[Info, Error]:
            async with AsyncClient.from_uri(f"unix://{path}") as client:
                await client.write_event(Describe().event())
                info = Info.from_event((await until(client, "info"))[-1])
                # then say nothing: the server says why it hangs up
                return info, Error.from_event((await until(client, "error"))[-1])

        info, error = run_async(go())
        assert info.tts[0].voices[0].name == "voice"
        assert error.code == "idle_timeout"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 143
    assert not path.exists()  # the socket file is removed on the way out
    assert "pockettts: error" not in err.text()  # a server's normal stop: no error line
    assert "Traceback" not in err.text()


def test_stdio_serves_the_process_that_started_it() -> None:
    args = ("wyoming", "--uri", "stdio://", *TINY_ARGS)
    with spawn(*args, stdin=subprocess.PIPE, stdout=subprocess.PIPE) as (proc, err):
        assert proc.stdin is not None and proc.stdout is not None
        write_event(Synthesize("Hello.").event(), proc.stdin)
        proc.stdin.flush()
        events = []
        while not events or events[-1].type != "audio-stop":
            event = read_event(proc.stdout)
            assert event is not None, err.text()
            events.append(event)
        _, chunks = audio_of(events)
        assert chunks
        proc.stdin.close()  # the end of standard input ends the server
        assert proc.wait(60) == 0, err.text()


def test_sigterm_during_a_synthesis_stops_the_server_cleanly(server) -> None:
    uri, proc, err = server

    async def go() -> None:
        async with AsyncClient.from_uri(uri) as client:
            await client.write_event(Synthesize("One more sentence. " * 15).event())
            await until(client, "audio-chunk")  # speaking now
            proc.send_signal(signal.SIGTERM)
            while await client.read_event() is not None:  # the server hangs up
                pass

    run_async(go())
    assert proc.wait(30) == 143
    assert "pockettts: error" not in err.text()  # a server's normal stop: no error line
    assert "Traceback" not in err.text()


def test_flags_and_uri_are_checked_before_loading(tmp_path) -> None:
    for uri, fragment in (
        ("http://127.0.0.1:80", "use tcp://HOST:PORT, unix://PATH or stdio://"),
        ("tcp://127.0.0.1", "needs a host and a port"),
    ):
        r = subprocess.run(
            [SCRIPT, "wyoming", "--uri", uri, *TINY_ARGS], capture_output=True, timeout=60
        )
        assert r.returncode == 2, r.stderr
        assert fragment in r.stderr.decode() and b"Traceback" not in r.stderr
    r = subprocess.run(
        [SCRIPT, "wyoming", "--voice-dir", str(tmp_path / "none")],
        capture_output=True,
        timeout=60,
    )
    assert r.returncode == 1 and b"voice folder not found" in r.stderr


def test_without_the_extra_one_line_names_it() -> None:
    r = without_module("wyoming", "wyoming")
    assert r.returncode == 1
    assert "pip install 'pockettts[wyoming]'" in one_line(r.stderr)
