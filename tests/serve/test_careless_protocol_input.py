"""The protocol front ends given careless input as real clients send it: wrong JSON types
on the websocket and on Wyoming, SSML that arrives cut into pieces, and MCP file names
that cannot be files. Each gets one clear line (or is spoken whole), never an internal
error, and the connection serves on."""

from __future__ import annotations

import json

import pytest

aiohttp = pytest.importorskip("aiohttp")
pytest.importorskip("websockets")
pytest.importorskip("wyoming")
pytest.importorskip("mcp")

from wyoming.client import AsyncClient  # noqa: E402
from wyoming.event import Event  # noqa: E402
from wyoming.info import Describe, Info  # noqa: E402
from wyoming.tts import (  # noqa: E402
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeTextFormat,
)

from tests.serve.test_mcp import call, text_of  # noqa: E402
from tests.support.protohelp import TINY_ARGS, run_async, spawn  # noqa: E402
from tests.support.servehelp import serving  # noqa: E402

# A document whose sentence ends fall inside its elements: cut there, both halves are
# malformed SSML (and were dropped unsaid: the turn was silent).
SSML_PIECES = ("<speak>Hello there. ", "<p>How are you. ", "Fine?</p></speak>")


@pytest.fixture(scope="module")
def ws_url():
    with serving() as (url, _):
        yield url.replace("http://", "ws://") + "/tts/ws"


@pytest.fixture(scope="module")
def wyoming():
    with spawn("wyoming", "--uri", "tcp://127.0.0.1:0", *TINY_ARGS) as (_, err):
        err.wait_event("listening")
        yield err


async def _ws_turn(ws, pieces: tuple[str, ...]) -> tuple[bytes, list[dict]]:
    """One turn (seed 7): its PCM and the JSON frames that came with it."""
    await ws.send_str(json.dumps({"type": "config", "data": {"seed": 7}}))
    frames, pcm = [], b""
    for piece in pieces:
        await ws.send_str(json.dumps({"type": "text", "data": {"text": piece}}))
    await ws.send_str(json.dumps({"type": "flush"}))
    while True:
        message = await ws.receive(timeout=60)
        if message.type == aiohttp.WSMsgType.BINARY:
            pcm += message.data
            continue
        assert message.type == aiohttp.WSMsgType.TEXT, message
        frames.append(json.loads(message.data))
        if frames[-1]["type"] == "error" or frames[-1]["data"].get("event_type") == "final":
            return pcm, frames


def test_websocket_temperature_of_the_wrong_type_is_an_option_error(ws_url) -> None:
    async def go():
        async with aiohttp.ClientSession() as http, http.ws_connect(ws_url) as ws:
            seen = []
            for temperature in ("hot", [1], True):
                config = {"type": "config", "data": {"temperature": temperature}}
                await ws.send_str(json.dumps(config))
                seen.append(json.loads((await ws.receive(timeout=60)).data))
            await ws.send_str(json.dumps({"type": "config", "data": {"temperature": 0.5}}))
            seen.append(json.loads((await ws.receive(timeout=60)).data))
            return seen

    *errors, accepted = run_async(go())
    assert [e["data"]["code"] for e in errors] == ["invalid_option"] * 3, errors
    assert errors[0]["data"]["message"] == (
        "temperature must be a number, not 'hot'; it still has no config"
    )
    assert accepted["data"]["event_type"] == "config_accepted"


def test_websocket_ssml_in_pieces_is_spoken_whole(ws_url) -> None:
    async def go():
        async with aiohttp.ClientSession() as http, http.ws_connect(ws_url) as ws:
            return await _ws_turn(ws, SSML_PIECES), await _ws_turn(ws, ("".join(SSML_PIECES),))

    (pieces, frames), (whole, _) = run_async(go())
    assert frames[-1]["data"]["event_type"] == "final", frames
    assert len(whole) > 0 and pieces == whole


async def _wyoming(uri: str, *events: Event) -> list[Event]:
    """The events' answers, up to an error, an audio-stop or synthesize-stopped (for a
    streamed synthesis), then a describe's info to show the connection still serves."""
    got: list[Event] = []
    streaming = any(SynthesizeStart.is_type(e.type) for e in events)
    async with AsyncClient.from_uri(uri) as client:
        for event in events:
            await client.write_event(event)
        while True:
            event = await client.read_event()
            assert event is not None, [e.type for e in got]
            got.append(event)
            if event.type == "error" or event.type == (
                "synthesize-stopped" if streaming else "audio-stop"
            ):
                break
        await client.write_event(Describe().event())
        got.append(await client.read_event())
    return got


@pytest.mark.parametrize(
    ("voice", "expected"),
    [
        ("alba", """synthesize: voice must be an object like {"name": "alba"}, not 'alba'"""),
        (5, 'synthesize: voice must be an object like {"name": "alba"}, not 5'),
        ({"name": 5}, "synthesize: the voice's name must be a string, not 5"),
    ],
)
def test_wyoming_voice_of_the_wrong_shape_is_a_bad_request(wyoming, voice, expected) -> None:
    got = run_async(_wyoming(_uri(wyoming), Event("synthesize", {"text": "Hi.", "voice": voice})))
    assert [e.type for e in got] == ["error", "info"], [e.type for e in got]
    assert got[0].data == {"text": expected, "code": "bad_request"}
    assert Info.from_event(got[1]).tts


def _uri(err) -> str:
    return err.wait_event("listening")["uri"]


def _pcm(events: list[Event]) -> bytes:
    return b"".join(e.payload or b"" for e in events if e.type == "audio-chunk")


def test_wyoming_streamed_ssml_is_spoken_as_the_whole_document(wyoming) -> None:
    ssml = SynthesizeTextFormat.SSML
    streamed = run_async(
        _wyoming(
            _uri(wyoming),
            SynthesizeStart(text_format=ssml).event(),
            *(SynthesizeChunk(piece).event() for piece in SSML_PIECES),
            SynthesizeStop().event(),
        )
    )
    # Wyoming has no seed: the same document's audio differs each time, so what tells
    # is that every frame of the document is spoken and nothing was skipped.
    assert "error" not in [e.type for e in streamed]
    assert len(_pcm(streamed)) > 0
    notices = [e for e in wyoming.events() if e.get("event") == "synthesis notices"]
    assert notices == [], [n["notices"] for n in notices]


def test_mcp_file_names_that_cannot_be_files_are_one_line(tmp_path) -> None:
    async def steps(session):
        out = []
        for path in ("a\x00b.wav", "no/such/folder/x.wav"):
            result = await session.call_tool("synthesize", {"text": "Hi.", "path": path})
            out.append((result.is_error, text_of(result)))
        return out

    (nul_error, nul), (missing_error, missing) = call(
        [*TINY_ARGS, "--output-dir", str(tmp_path)], steps
    )
    assert nul_error and nul.endswith("'a\\x00b.wav' is not a usable file name: embedded null byte")
    target = tmp_path.resolve() / "no/such/folder/x.wav"
    assert missing_error and missing.endswith(f": cannot write {target}: its folder does not exist")
    assert missing.count("cannot write") == 1, missing
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("uri", ["tcp://127.0.0.1:99999", "tcp://127.0.0.1:port"])
def test_wyoming_uri_with_a_port_that_is_no_port_says_so(uri) -> None:
    from pocketcli.wyoming.server import parse_uri

    with pytest.raises(ValueError) as caught:
        parse_uri(uri)
    assert str(caught.value) == f"{uri!r}: the port must be a number from 0 to 65535"


def test_websocket_turn_left_open_without_a_flush_does_not_keep_an_idle_socket() -> None:
    from pocketcli.serve.limits import Limits, ServeSettings

    settings = ServeSettings(limits=Limits(ws_idle_seconds=1))
    with serving(settings=settings) as (http_url, _):
        url = http_url.replace("http://", "ws://") + "/tts/ws"

        async def go():
            async with aiohttp.ClientSession() as http, http.ws_connect(url) as ws:
                await ws.send_str(json.dumps({"type": "config", "data": {}}))
                await ws.send_str(json.dumps({"type": "text", "data": {"text": "Hello"}}))
                frames = []
                while True:  # the config's answer, then the idle line, then the close
                    message = await ws.receive(timeout=60)
                    if message.type != aiohttp.WSMsgType.TEXT:
                        return frames, message
                    frames.append(json.loads(message.data))

        frames, closed = run_async(go())
    assert frames[0]["data"]["event_type"] == "config_accepted"
    assert frames[-1]["data"] == {
        "message": "nothing received for 1 s: closing",
        "code": "idle_timeout",
    }
    assert closed.type == aiohttp.WSMsgType.CLOSE
