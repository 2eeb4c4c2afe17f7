"""The streaming websocket /tts/ws, driven by livekit-plugins-pocket's own wire code (its
protocol.py, which imports nothing of LiveKit, loaded from the installed package) over a
real socket (aiohttp, as the plugin connects)."""

from __future__ import annotations

import asyncio
import importlib.metadata
import importlib.util
import json
import signal
import sys
import time
from collections.abc import AsyncIterator

import numpy as np
import pytest

aiohttp = pytest.importorskip("aiohttp")
pytest.importorskip("websockets")

from pocketcli.api import PocketTTS  # noqa: E402
from pocketcli.audio.wav import to_pcm16  # noqa: E402
from pocketcli.options import SpeakOptions  # noqa: E402
from pocketcli.serve.limits import Limits, ServeSettings  # noqa: E402
from tests.support.protohelp import run_async  # noqa: E402
from tests.support.servehelp import PACK, VOICE, pcm16, serving  # noqa: E402


def _plugin_protocol():
    try:
        files = importlib.metadata.files("livekit-plugins-pocket") or []
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("livekit-plugins-pocket is not installed")
    (path,) = [f for f in files if str(f).endswith("livekit/plugins/pocket/protocol.py")]
    spec = importlib.util.spec_from_file_location("pocket_protocol", path.locate())
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


protocol = _plugin_protocol()


@pytest.fixture(scope="module")
def server():
    with serving() as (url, records):
        yield url.replace("http://", "ws://") + "/tts/ws", records


@pytest.fixture(scope="module")
def tts():
    return PocketTTS.open(runtime="onnx", model_dir=PACK)


def expected(tts, pieces: list[str], seed: int) -> np.ndarray:
    """A live session with the sentences the server cuts the pieces into."""
    with tts.session(tts.voices.load(VOICE), SpeakOptions(seed=seed)) as session:
        for piece in pieces:
            session.enqueue(piece)
        session.finish()
        return to_pcm16(np.concatenate([f.audio for f in session]))


def config(seed: int | None = None, **extra) -> dict:
    made = protocol.build_config(voice=None, language=None, sample_rate=24000, normalize=True)
    if seed is not None:
        made["seed"] = seed
    return {**made, **extra}


async def texts(*pieces: str, wait: asyncio.Event | None = None) -> AsyncIterator[str]:
    """The pieces, as an LLM writes them; with ``wait``, the last ones only once it is set."""
    for i, piece in enumerate(pieces):
        if wait is not None and i == 1:
            await asyncio.wait_for(wait.wait(), 60)
        yield piece


async def with_socket(url: str, steps, api_key: str | None = None):
    async with aiohttp.ClientSession() as http:

        async def connect():
            return await http.ws_connect(url, headers=protocol.connect_headers(api_key))

        socket = protocol.SessionSocket(connect, timeout=60)
        try:
            return await steps(socket)
        finally:
            await socket.aclose()


def test_turns_on_one_socket_speak_sentences_as_they_complete(server, tts) -> None:
    url, _ = server

    async def steps(socket):
        first_audio = asyncio.Event()
        turns: list[bytearray] = [bytearray(), bytearray()]

        def on_pcm(i: int):
            def take(pcm: bytes) -> None:
                turns[i].extend(pcm)
                first_audio.set()

            return take

        ids: list[str | None] = []
        # The first sentence is heard before the rest of the text is even sent.
        await socket.speak(
            config(seed=3),
            texts("Hello there. How", " are you?", wait=first_audio),
            on_pcm(0),
            timeout=60,
            on_ready=ids.append,
        )
        await socket.speak(
            config(seed=4), texts("Second turn."), on_pcm(1), timeout=60, on_ready=ids.append
        )
        return turns, ids, socket.last_reused

    turns, ids, reused = run_async(with_socket(url, steps))
    np.testing.assert_array_equal(
        pcm16(bytes(turns[0])), expected(tts, ["Hello there. ", "How are you?"], 3)
    )
    np.testing.assert_array_equal(pcm16(bytes(turns[1])), expected(tts, ["Second turn."], 4))
    assert reused  # one socket, two turns
    assert len(set(ids)) == 2 and all(ids)


def test_cancel_stops_the_turn_and_the_next_turn_hears_only_its_own_audio(server, tts) -> None:
    url, records = server

    async def steps(socket):
        got = asyncio.Event()
        long = " ".join(f"Sentence number {i} goes on for a while." for i in range(30))
        task = asyncio.ensure_future(
            socket.speak(config(seed=1), texts(long), lambda pcm: got.set(), timeout=60)
        )
        await asyncio.wait_for(got.wait(), 60)
        task.cancel()  # the plugin sends cancel on the same socket
        with pytest.raises(asyncio.CancelledError):
            await task
        after = bytearray()
        await socket.speak(config(seed=2), texts("Short one."), after.extend, timeout=60)
        return bytes(after), socket.last_reused

    after, reused = run_async(with_socket(url, steps))
    assert reused
    np.testing.assert_array_equal(pcm16(after), expected(tts, ["Short one."], 2))
    long_turns = [r for r in records.records if r["event"] == "ws turn" and r["chars"] > 100]
    assert long_turns and all(r["outcome"] == "cancelled" for r in long_turns)


def test_several_sockets_at_once_and_base64_frames_and_other_rates(server, tts) -> None:
    url, _ = server

    async def one(cfg: dict, text: str) -> bytes:
        async def steps(socket):
            out = bytearray()
            await socket.speak(cfg, texts(text), out.extend, timeout=60)
            return bytes(out)

        return await with_socket(url, steps)

    async def go():
        return await asyncio.gather(
            one(config(seed=7), "Socket one speaks."),
            one(config(seed=7, binary=False), "Socket one speaks."),
            one(config(seed=7, sample_rate=16000), "Socket one speaks."),
        )

    binary, base64_frames, resampled = run_async(go())
    want = expected(tts, ["Socket one speaks."], 7)
    np.testing.assert_array_equal(pcm16(binary), want)
    np.testing.assert_array_equal(pcm16(base64_frames), want)
    assert abs(len(pcm16(resampled)) - want.size * 2 // 3) <= 2


def test_bad_configs_and_frames_are_error_frames_and_the_socket_serves_on(server) -> None:
    url, _ = server

    async def go():
        async with aiohttp.ClientSession() as http, http.ws_connect(url) as ws:
            seen = []
            for frame in (
                {"type": "text", "data": {"text": "Hi."}},  # no config yet
                {"type": "config", "data": {"voice": "../../etc/passwd"}},
                {"type": "config", "data": {"sample_rate": 100}},
                {"type": "config", "data": {"format": "mp3"}},
                {"type": "config", "data": {"language": "german"}},
                {"type": "config", "data": {"seed": -1}},
                {"type": "dance"},
            ):
                await ws.send_str(json.dumps(frame))
                seen.append(protocol.interpret(await ws.receive(timeout=60)))
            await ws.send_str(json.dumps({"type": "config", "data": {}}))
            accepted = protocol.interpret(await ws.receive(timeout=60))
            await ws.send_str(json.dumps({"type": "text", "data": {"text": "word " * 900}}))
            too_long = protocol.interpret(await ws.receive(timeout=60))
            await ws.send_str("not json")
            bad = protocol.interpret(await ws.receive(timeout=60))
            closed = await ws.receive(timeout=60)
            return seen, accepted, too_long, bad, closed

    seen, accepted, too_long, bad, closed = run_async(go())
    assert [e.kind for e in seen] == ["error"] * 7
    codes = [e.message.split(":")[0] for e in seen]
    assert codes == [
        "no_config",
        "voice_not_found",
        "invalid_config",
        "invalid_config",
        "unsupported_language",
        "invalid_option",
        "bad_request",
    ], seen
    assert "reads no path" in seen[1].message and "this server speaks english" in seen[4].message
    assert accepted.kind == "config_accepted" and accepted.request_id
    assert too_long.message.startswith("text_too_long")
    assert bad.message.startswith("bad_frame")
    assert closed.type == aiohttp.WSMsgType.CLOSE


def test_the_api_key_is_checked_in_the_handshake() -> None:
    settings = ServeSettings(api_key="sesame")
    with serving(settings=settings) as (http_url, _):
        url = http_url.replace("http://", "ws://") + "/tts/ws"

        async def refused(key: str | None) -> int:
            async with aiohttp.ClientSession() as http:
                try:
                    await http.ws_connect(url, headers=protocol.connect_headers(key))
                except aiohttp.WSServerHandshakeError as exc:
                    return exc.status
            return 101

        async def speaks(socket):
            out = bytearray()
            await socket.speak(config(), texts("Let me in."), out.extend, timeout=60)
            return len(out)

        assert run_async(refused(None)) == 403
        assert run_async(refused("wrong")) == 403
        assert run_async(with_socket(url, speaks, api_key="sesame")) > 0


def test_an_idle_socket_is_told_and_closed_and_sockets_are_bounded() -> None:
    settings = ServeSettings(limits=Limits(ws_idle_seconds=1, ws_max_sockets=1))
    with serving(settings=settings) as (http_url, _):
        url = http_url.replace("http://", "ws://") + "/tts/ws"

        async def go():
            async with aiohttp.ClientSession() as http, http.ws_connect(url) as ws:
                async with http.ws_connect(url) as second:
                    refused = protocol.interpret(await second.receive(timeout=60))
                return (
                    refused,
                    protocol.interpret(await ws.receive(timeout=60)),
                    await ws.receive(60),
                )

        refused, error, closed = run_async(go())
        assert refused.message.startswith("too_many_sockets")
        assert error.message.startswith("idle_timeout")
        assert closed.type == aiohttp.WSMsgType.CLOSE


def test_cancel_stops_the_generation_and_no_final_comes(server) -> None:
    url, records = server
    long = " ".join(f"Sentence number {i} goes on for a while." for i in range(90))

    async def go():
        async with aiohttp.ClientSession() as http, http.ws_connect(url) as ws:
            await ws.send_str(protocol.client_message("config", config(seed=1)))
            accepted = protocol.interpret(await ws.receive(timeout=60))
            await ws.send_str(protocol.client_message("text", {"text": long}))
            await ws.send_str(protocol.client_message("flush"))
            assert protocol.interpret(await ws.receive(timeout=60)).kind == "audio"
            await ws.send_str(protocol.client_message("cancel"))
            await ws.send_str(protocol.client_message("ping"))
            kinds = []
            while not kinds or kinds[-1] != "pong":  # the cancel is handled before the ping
                kinds.append(protocol.interpret(await ws.receive(timeout=60)).kind)
            # The turn's record, while the socket is still open (closing it would cancel too).
            deadline = time.monotonic() + 60
            rid = accepted.request_id
            while not (done := [r for r in records.records if r.get("request_id") == rid]):
                assert time.monotonic() < deadline, "no log record of the cancelled turn"
                await asyncio.sleep(0.05)
            return kinds, done[0]

    kinds, done = run_async(go())
    assert "final" not in kinds
    assert done["outcome"] == "cancelled"
    assert done["samples"] < 90 * 4 * 1920  # stopped well before its end


def test_sigterm_closes_speaking_sockets_and_the_server_exits_cleanly() -> None:
    from tests.support.cli import SCRIPT
    from tests.support.protohelp import TINY_ARGS
    from tests.support.servehelp import spawn

    long = " ".join(f"Sentence number {i} goes on for a while." for i in range(90))
    with spawn(SCRIPT, *TINY_ARGS) as (proc, http_url):
        url = http_url.replace("http://", "ws://") + "/tts/ws"

        async def go():
            async with aiohttp.ClientSession() as http, http.ws_connect(url) as ws:
                await ws.send_str(protocol.client_message("config", config(seed=1)))
                await ws.receive(timeout=60)
                await ws.send_str(protocol.client_message("text", {"text": long}))
                await ws.send_str(protocol.client_message("flush"))
                assert protocol.interpret(await ws.receive(timeout=60)).kind == "audio"
                proc.send_signal(signal.SIGTERM)
                kinds = []
                while kinds[-1:] != ["close"]:
                    kinds.append(protocol.interpret(await ws.receive(timeout=60)).kind)
                return kinds

        kinds = run_async(go())
        assert "final" not in kinds
        assert proc.wait(30) == 143
        assert proc.stderr is not None
        err = proc.stderr.read().decode()
    assert '"outcome": "cancelled"' in err and "Traceback" not in err
