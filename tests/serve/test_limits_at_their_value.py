"""The server's limits hold at exactly their value: a value at a limit is accepted, one
just under it too, one just over refused (README's table of bounds: "at most", "up to").
The API key is the key and nothing near it. Requests that crash are counted with the
status their client got. A websocket client that keeps sending stays connected.

`pockettts serve` as a child process where the bound is a flag; the app under uvicorn in
this process where the test needs a model that fails or a bound without a flag. Real
clients (httpx, raw sockets, aiohttp's websocket)."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.serve.test_http import paced_loader
from tests.support.cli import SCRIPT
from tests.support.protohelp import run_async
from tests.support.servehelp import PACK, TINY, VOICE, serving, spawn

DEADLINE = 60.0
TINY_ARGS = ("--model-dir", str(PACK), "--voice-file", str(VOICE))
KEY = "Sesame-42"
UPLOAD_MB = 0.25
# README: "--max-upload-mb (body: that + 64 KB)".
BODY_LIMIT = int(UPLOAD_MB * 2**20) + 64 * 1024
MAX_CHARS = 20
CLONE_WAV = (TINY / "clone_prompt_24k.wav").read_bytes()


@pytest.fixture(scope="module")
def keyed() -> Iterator[str]:
    args = ("--api-key", KEY, "--max-upload-mb", str(UPLOAD_MB), "--max-chars", str(MAX_CHARS))
    with spawn(SCRIPT, *TINY_ARGS, *args) as (_, url):
        yield url


def _padded_speech(size: int) -> bytes:
    """A valid speech request of exactly ``size`` bytes (JSON allows trailing blanks)."""
    body = json.dumps(
        {"model": "tts-1", "input": "Hi.", "voice": "alloy", "response_format": "pcm"}
    ).encode()
    assert size >= len(body)
    return body + b" " * (size - len(body))


def _post(url: str, content, **headers: str) -> httpx.Response:
    headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json", **headers}
    return httpx.post(f"{url}/v1/audio/speech", content=content, headers=headers, timeout=60)


@pytest.mark.parametrize(
    ("size", "status"),
    [(BODY_LIMIT - 1, 200), (BODY_LIMIT, 200), (BODY_LIMIT + 1, 413)],
    ids=["under", "at", "over"],
)
@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_a_body_of_exactly_the_limit_is_read_and_one_byte_more_is_413(
    keyed, size, status, framing
) -> None:
    body = _padded_speech(size)
    if framing == "chunked":  # no Content-Length: counted as it arrives
        r = _post(keyed, iter([body[: size // 2], body[size // 2 :]]))
        assert "content-length" not in {k.lower() for k in r.request.headers}
    else:
        r = _post(keyed, body)
    assert r.status_code == status, r.text[:300]
    if status == 413:
        assert r.json()["error"]["code"] == "body_too_large"
    else:
        assert len(r.content) > 0


@pytest.mark.parametrize(
    ("chars", "status"), [(MAX_CHARS - 1, 200), (MAX_CHARS, 200), (MAX_CHARS + 1, 400)]
)
def test_max_chars_holds_at_its_value(keyed, chars, status) -> None:
    text = ("Hello there, you. " * 5)[:chars]
    body = {"model": "tts-1", "input": text, "voice": "alloy", "response_format": "pcm"}
    r = httpx.post(
        f"{keyed}/v1/audio/speech",
        json=body,
        headers={"Authorization": f"Bearer {KEY}"},
        timeout=60,
    )
    assert r.status_code == status, r.text[:300]


@pytest.mark.parametrize(
    ("header", "value", "status"),
    [
        ("Authorization", f"Bearer {KEY}", 200),
        ("Authorization", f"bearer {KEY}", 200),  # RFC 7235: the scheme is case-insensitive
        ("Authorization", f"BEARER {KEY}", 200),
        ("X-API-Key", KEY, 200),
        ("Authorization", f"Bearer {KEY}x", 401),  # a suffix
        ("Authorization", f"Bearer x{KEY}", 401),  # a prefix
        ("Authorization", f"Bearer {KEY[:-1]}", 401),  # the key cut short
        ("Authorization", f"Bearer {KEY.lower()}", 401),  # the key's case
        ("Authorization", f"Bearer {KEY.upper()}", 401),
        ("Authorization", "Bearer Sesame-43", 401),  # a sibling
        ("Authorization", f"Basic {KEY}", 401),  # another scheme
        ("Authorization", f"Bearer{KEY}", 401),  # no space after the scheme
        ("X-API-Key", f"{KEY}x", 401),
        ("X-API-Key", KEY.lower(), 401),
        ("X-Api-Key-2", KEY, 401),  # a sibling header
    ],
)
def test_the_api_key_is_the_key_and_nothing_near_it(keyed, header, value, status) -> None:
    r = httpx.get(f"{keyed}/v1/models", headers={header: value}, timeout=60)
    assert r.status_code == status, (header, value, r.text[:200])
    if status == 401:
        assert r.json()["error"]["code"] == "invalid_api_key"


def _connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=DEADLINE)


def _healthz_until(url: str, status: int, seconds: float = 20.0) -> int:
    """/healthz's status once it is ``status`` (connections this process just closed may
    still be counted for a moment), else the last one seen after ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        got = httpx.get(f"{url}/healthz", timeout=DEADLINE).status_code
        if got == status or time.monotonic() > deadline:
            return got
        time.sleep(0.05)


def test_connections_up_to_the_limit_are_served_and_one_more_is_503() -> None:
    limit = 3
    with spawn(SCRIPT, *TINY_ARGS, "--max-connections", str(limit)) as (_, url):
        held: list[socket.socket] = []
        try:
            held.append(_connect(url))  # with the request's own: one under the limit
            assert _healthz_until(url, 200) == 200
            held.append(_connect(url))  # the request's connection is the limit's last
            assert _healthz_until(url, 200) == 200
            held.append(_connect(url))  # the request's connection is one over
            r = httpx.get(f"{url}/healthz", timeout=DEADLINE)
            assert r.status_code == 503
            assert r.json()["error"]["code"] == "too_many_connections"
        finally:
            for sock in held:
                sock.close()


def _boom(i: int) -> None:
    raise RuntimeError("the model broke")


def _broken_loader():
    """The tiny model, whose frames fail (the speech routes answer 500 themselves) and
    whose cloning check fails too (a bug: nothing in the route catches it, so the request
    crashes before it answers and the app's last handler answers 500)."""
    base = paced_loader(_boom)

    def load():
        backend = base()

        def broken(self):
            raise RuntimeError("a bug")

        backend.__class__ = type(
            "Broken", (type(backend),), {"cloning_unavailable": property(broken)}
        )
        return backend

    return load


def test_a_request_that_crashes_is_counted_with_the_status_its_client_got() -> None:
    with serving(_broken_loader()) as (url, _):
        body = {"model": "tts-1", "input": "Hi.", "voice": "alloy", "response_format": "wav"}
        statuses = [
            httpx.post(f"{url}/v1/audio/speech", json=body, timeout=60).status_code,
            httpx.post(f"{url}/tts", data={"text": "Hi."}, timeout=60).status_code,
            httpx.post(
                f"{url}/v1/voices", files={"file": ("v.wav", CLONE_WAV)}, timeout=60
            ).status_code,
        ]
        metrics = httpx.get(f"{url}/metrics", timeout=60).text
    assert statuses == [500, 500, 500]
    for endpoint in ("/v1/audio/speech", "/tts", "/v1/voices"):
        assert f'pockettts_requests_total{{endpoint="{endpoint}",status="500"}} 1.0' in metrics
    assert 'status="0"' not in metrics


aiohttp = pytest.importorskip("aiohttp")


async def _ws_replies(url: str, frames: list[dict]) -> list[dict]:
    async with aiohttp.ClientSession() as http, http.ws_connect(url) as ws:
        replies = []
        for frame in frames:
            await ws.send_str(json.dumps(frame))
            replies.append(json.loads((await ws.receive(timeout=DEADLINE)).data))
        return replies


def test_websocket_sample_rates_from_8000_to_48000_inclusive() -> None:
    with serving() as (url, _):
        ws_url = url.replace("http://", "ws://") + "/tts/ws"
        rates = [7999, 8000, 8001, 47999, 48000, 48001]
        frames = [{"type": "config", "data": {"sample_rate": r}} for r in rates]
        replies = run_async(_ws_replies(ws_url, frames))
    kinds = {
        rate: reply["data"]["event_type"] if reply["type"] == "event" else reply["type"]
        for rate, reply in zip(rates, replies, strict=True)
    }
    assert kinds == {
        7999: "error",
        8000: "config_accepted",
        8001: "config_accepted",
        47999: "config_accepted",
        48000: "config_accepted",
        48001: "error",
    }, replies


def test_frames_a_websocket_client_sends_keep_it_open_past_the_idle_time() -> None:
    """Idle 1 s; the client pings every 0.2 s for 3 s (three idle times): every ping is
    answered, then, silent, it is told it idled and closed."""
    from pocketcli.serve.limits import Limits, ServeSettings

    settings = ServeSettings(limits=Limits(ws_idle_seconds=1))
    with serving(settings=settings) as (url, _):
        ws_url = url.replace("http://", "ws://") + "/tts/ws"

        async def go():
            async with aiohttp.ClientSession() as http, http.ws_connect(ws_url) as ws:
                answers = []
                end = time.monotonic() + 3.0
                while time.monotonic() < end:
                    await ws.send_str(json.dumps({"type": "ping"}))
                    answers.append(json.loads((await ws.receive(timeout=DEADLINE)).data))
                    await asyncio.sleep(0.2)
                told = json.loads((await ws.receive(timeout=DEADLINE)).data)
                closed = await ws.receive(timeout=DEADLINE)
                return answers, told, closed

        answers, told, closed = run_async(go())
    assert len(answers) >= 10 and {a["type"] for a in answers} == {"pong"}, answers
    assert told["type"] == "error" and "idle" in json.dumps(told)
    assert closed.type == aiohttp.WSMsgType.CLOSE


def test_a_websocket_turn_of_exactly_max_chars_is_spoken() -> None:
    from pocketcli.serve.limits import Limits, ServeSettings

    with serving(settings=ServeSettings(limits=Limits(max_chars=MAX_CHARS))) as (url, _):
        ws_url = url.replace("http://", "ws://") + "/tts/ws"

        async def turn(text: str) -> str:
            async with aiohttp.ClientSession() as http, http.ws_connect(ws_url) as ws:
                await ws.send_str(json.dumps({"type": "config", "data": {}}))
                await ws.receive(timeout=DEADLINE)  # config_accepted
                half = len(text) // 2  # in two text frames: the turn's total counts
                for piece in (text[:half], text[half:]):
                    await ws.send_str(json.dumps({"type": "text", "data": {"text": piece}}))
                await ws.send_str(json.dumps({"type": "flush"}))
                while True:
                    message = await ws.receive(timeout=DEADLINE)
                    if message.type != aiohttp.WSMsgType.TEXT:
                        continue  # audio
                    frame = json.loads(message.data)
                    if frame["type"] == "error":
                        return frame["data"]["code"]
                    if frame["data"].get("event_type") == "final":
                        return "final"

        text = "Hello there, you. " * 5
        said = {n: run_async(turn(text[:n])) for n in (MAX_CHARS - 1, MAX_CHARS, MAX_CHARS + 1)}
    assert said == {MAX_CHARS - 1: "final", MAX_CHARS: "final", MAX_CHARS + 1: "text_too_long"}
