"""Issue 31 item 5 and issue 32's messages: what HTTP refuses, the websocket and Wyoming
refuse the same way (HTTP's message, each protocol's error shape); a websocket config
that fails leaves the socket's config as it was and says so, and one sent without the
``{"type", "data"}`` envelope is refused naming it; a voice folder holding a model
checkpoint lists no "model" voice and a damaged voice is ``voice_unreadable`` on Wyoming
too; Wyoming never offers cloned voices it cannot make; a taken port is one line."""

from __future__ import annotations

import json
import shutil
import socket

import pytest

aiohttp = pytest.importorskip("aiohttp")
pytest.importorskip("websockets")
pytest.importorskip("wyoming")

import httpx  # noqa: E402
from wyoming.client import AsyncClient  # noqa: E402
from wyoming.event import Event  # noqa: E402
from wyoming.info import Describe, Info  # noqa: E402
from wyoming.tts import (  # noqa: E402
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeTextFormat,
    SynthesizeVoice,
)

from pocketcli.serve.limits import ServeSettings  # noqa: E402
from tests.support.cli import run  # noqa: E402
from tests.support.protohelp import TINY, TINY_ARGS, one_line, run_async, spawn  # noqa: E402
from tests.support.servehelp import serving  # noqa: E402

REFUSED = ("<speak><p>Hello. There.", "\u0000\u0007")


@pytest.fixture(scope="module")
def voices(tmp_path_factory):
    """A voice folder as users fill it: a voice, a model checkpoint, a damaged voice."""
    folder = tmp_path_factory.mktemp("voices")
    shutil.copy(TINY / "voice.safetensors", folder / "bob.safetensors")
    shutil.copy(TINY / "model.safetensors", folder / "model.safetensors")
    (folder / "broken.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{}garbage")
    return folder


@pytest.fixture(scope="module")
def http(voices):
    with serving(settings=ServeSettings(voice_dir=voices)) as (url, _):
        yield url


@pytest.fixture(scope="module")
def wyoming(voices):
    args = ("wyoming", "--uri", "tcp://127.0.0.1:0", *TINY_ARGS, "--voice-dir", str(voices))
    with spawn(*args) as (_, err):
        yield err.wait_event("listening")["uri"]


def _http_refusal(url: str, text: str) -> dict:
    body = {"model": "tts-1", "input": text, "response_format": "wav"}
    r = httpx.post(url + "/v1/audio/speech", json=body, timeout=60)
    assert r.status_code == 400, r.text
    return r.json()["error"]


async def _ws_frames(url: str, *frames: dict, until: int) -> list[dict]:
    """Sends the frames; the JSON frames answered, ``until`` of them (audio skipped)."""
    got: list[dict] = []
    async with aiohttp.ClientSession() as session, session.ws_connect(url) as ws:
        for frame in frames:
            await ws.send_str(json.dumps(frame))
        while len(got) < until:
            message = await ws.receive(timeout=60)
            if message.type == aiohttp.WSMsgType.TEXT:
                got.append(json.loads(message.data))
    return got


def _ws(url: str) -> str:
    return url.replace("http://", "ws://") + "/tts/ws"


def test_text_http_refuses_is_refused_alike_on_the_websocket_and_wyoming(http, wyoming) -> None:
    for text in REFUSED:
        refused = _http_refusal(http, text)
        frames = run_async(
            _ws_frames(
                _ws(http),
                {"type": "config", "data": {}},
                {"type": "text", "data": {"text": text}},
                {"type": "flush"},
                until=2,
            )
        )
        accepted, error = frames
        assert accepted["data"]["event_type"] == "config_accepted"
        assert error == {
            "type": "error",
            "data": {"message": refused["message"], "code": refused["code"]},
        }, text
        for events in (
            [Synthesize(text=text).event()],
            [
                SynthesizeStart().event(),
                SynthesizeChunk(text=text).event(),
                SynthesizeStop().event(),
            ],
        ):
            answers = run_async(_wyoming(wyoming, *events))
            errors = [e.data for e in answers if e.type == "error"]
            assert errors == [{"text": refused["message"], "code": refused["code"]}], text


async def _wyoming(uri: str, *events: Event) -> list[Event]:
    """The answers up to an error (or the audio's end), then a describe's info."""
    got: list[Event] = []
    async with AsyncClient.from_uri(uri) as client:
        for event in events:
            await client.write_event(event)
        ends = ("error", "synthesize-stopped", "audio-stop")
        while events and (not got or got[-1].type not in ends):
            event = await client.read_event()
            assert event is not None, [e.type for e in got]
            got.append(event)
        await client.write_event(Describe().event())
        while not got or got[-1].type != "info":
            got.append(await client.read_event())
    return got


def test_wyomings_ssml_text_format_is_honoured(wyoming) -> None:
    # Not a <speak> document: only text_format says it is SSML, and as SSML it is malformed.
    ssml = SynthesizeTextFormat.SSML
    answers = run_async(_wyoming(wyoming, Synthesize("Hello <p>there.", text_format=ssml).event()))
    assert [e.data.get("code") for e in answers if e.type == "error"] == ["invalid_text"]
    plain = run_async(_wyoming(wyoming, Synthesize("Hello <p>there.").event()))
    assert "error" not in [e.type for e in plain]


def test_a_failed_config_keeps_the_sockets_config_and_says_so(http) -> None:
    url = _ws(http)

    async def turn(*frames: dict) -> tuple[bytes, list[dict]]:
        pcm, got = b"", []
        async with aiohttp.ClientSession() as session, session.ws_connect(url) as ws:
            for frame in frames:
                await ws.send_str(json.dumps(frame))
            while not got or got[-1]["data"].get("event_type") != "final":
                message = await ws.receive(timeout=60)
                if message.type == aiohttp.WSMsgType.BINARY:
                    pcm += message.data
                else:
                    got.append(json.loads(message.data))
        return pcm, got

    text = {"type": "text", "data": {"text": "Hello there, how are you?"}}
    good = {"type": "config", "data": {"seed": 7}}
    bad = {"type": "config", "data": {"seed": 8, "sample_rate": 100}}
    kept, frames = run_async(turn(good, text, bad, {"type": "flush"}))
    alone, _ = run_async(turn(good, text, {"type": "flush"}))
    errors = [f["data"] for f in frames if f["type"] == "error"]
    assert errors == [
        {
            "message": "sample_rate must be a whole number from 8000 to 48000, not 100; "
            "its config is as it was",
            "code": "invalid_config",
        }
    ]
    assert len(alone) > 0 and kept == alone  # seed 7's turn, spoken on


def test_a_config_without_the_envelope_is_refused_naming_it(http) -> None:
    frames = run_async(
        _ws_frames(_ws(http), {"type": "config", "sample_rate": 16000, "seed": 3}, until=1)
    )
    assert frames[0]["type"] == "error", frames
    assert frames[0]["data"]["code"] == "bad_request"
    assert 'fields go inside "data"' in frames[0]["data"]["message"]
    assert "'sample_rate', 'seed'" in frames[0]["data"]["message"]


def test_stream_format_in_any_case(http) -> None:
    body = {"model": "tts-1", "input": "Hi.", "response_format": "WAV", "stream_format": "SSE"}
    r = httpx.post(http + "/v1/audio/speech", json=body, timeout=60)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")


def test_a_checkpoint_in_the_voice_folder_is_no_voice_and_damage_is_voice_unreadable(
    http, wyoming
) -> None:
    listed = [v["id"] for v in httpx.get(http + "/v1/voices", timeout=60).json()["data"]]
    info = Info.from_event(run_async(_wyoming(wyoming))[-1])
    described = [v.name for v in info.tts[0].voices]
    assert "bob" in listed and "model" not in listed, listed
    assert "bob" in described and "model" not in described, described
    broken = run_async(
        _wyoming(wyoming, Synthesize("Hi.", voice=SynthesizeVoice("broken")).event())
    )
    (error,) = [e.data for e in broken if e.type == "error"]
    assert error["code"] == "voice_unreadable", error
    model = run_async(_wyoming(wyoming, Synthesize("Hi.", voice=SynthesizeVoice("model")).event()))
    (unknown,) = [e.data for e in model if e.type == "error"]
    assert unknown["code"] == "voice_not_found" and "bob" in unknown["text"], unknown
    assert "cloned" not in unknown["text"], unknown  # Wyoming cannot clone
    body = {"model": "tts-1", "input": "Hi.", "voice": "model"}
    r = httpx.post(http + "/v1/audio/speech", json=body, timeout=60)
    assert r.status_code == 400 and "or a cloned voice's id" in r.json()["error"]["message"]


def test_wyoming_on_a_taken_port_is_one_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = run("wyoming", "--uri", f"tcp://127.0.0.1:{port}", *TINY_ARGS)
    assert r.returncode == 1
    assert one_line(r.stderr) == (
        f"pockettts: error: cannot listen on 127.0.0.1:{port}: address already in use "
        "(another server is on it: stop it, or choose another address)"
    )


def test_asyncios_lines_are_json_and_lost_writes_are_not_repeated(capsys) -> None:
    import logging

    from pocketcli.frontends import logs
    from tests.support.logstate import loggers_restored

    with loggers_restored():
        logs.configure("info")
        for _ in range(3):
            logging.getLogger("asyncio").warning("socket.send() raised exception.")
        logging.getLogger("asyncio").warning("Task was destroyed but it is pending!")
    lines = capsys.readouterr().err.splitlines()
    assert [json.loads(line)["event"] for line in lines] == [
        "Task was destroyed but it is pending!"
    ]
