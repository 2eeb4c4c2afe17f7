"""Speaking rate on every server front end with its real client (issue 36): OpenAI's
``speed`` through the openai SDK (plain and SSE, no notice), the websocket's config
through the websockets client, and MCP's tools through the mcp SDK. Each gives the
library's stretched stream for the same seed."""

from __future__ import annotations

import asyncio
import base64
import io
import json

import numpy as np
import openai
import pytest
import soundfile as sf

from pocketcli.api import PocketTTS
from pocketcli.audio.wav import to_pcm16
from pocketcli.options import SpeakOptions
from tests.support.servehelp import PACK, VOICE, pcm16, serving

TEXT = "Hello there, a little faster."


@pytest.fixture(scope="module")
def url():
    with serving() as (url, _):
        yield url


@pytest.fixture(scope="module")
def tts():
    return PocketTTS.open(runtime="onnx", model_dir=PACK)


def streamed(tts, text: str, seed: int, speed: float) -> np.ndarray:
    voice = tts.voices.load(VOICE)
    frames = tts.stream(text, voice, SpeakOptions(seed=seed, speed=speed))
    return to_pcm16(np.concatenate([f.audio for f in frames]))


def client(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0, timeout=60)


def test_openai_speed_plain_and_sse(url, tts) -> None:
    want = streamed(tts, TEXT, 5, 1.3)
    with client(url).audio.speech.with_streaming_response.create(
        model="tts-1", voice="alloy", input=TEXT, response_format="pcm", speed=1.3,
        extra_body={"seed": 5},
    ) as response:  # fmt: skip
        assert "x-pockettts-notice" not in response.headers
        plain = b"".join(response.iter_bytes())
    np.testing.assert_array_equal(pcm16(plain), want)
    with client(url).audio.speech.with_streaming_response.create(
        model="tts-1", voice="alloy", input=TEXT, response_format="pcm", speed=1.3,
        stream_format="sse", extra_body={"seed": 5},
    ) as response:  # fmt: skip
        events = [json.loads(x[6:]) for x in response.iter_lines() if x.startswith("data: ")]
    audio = b"".join(base64.b64decode(e["audio"]) for e in events if "audio" in e)
    np.testing.assert_array_equal(pcm16(audio), want)
    with pytest.raises(openai.BadRequestError, match="speed"):
        client(url).audio.speech.create(model="tts-1", voice="alloy", input="Hi.", speed=4.5)


def test_websocket_config_speed(url, tts) -> None:
    import websockets

    async def go():
        ws_url = url.replace("http://", "ws://") + "/tts/ws"
        async with websockets.connect(ws_url) as ws:
            config = {"sample_rate": 24000, "seed": 6, "speed": 0.8}
            await ws.send(json.dumps({"type": "config", "data": config}))
            await ws.send(json.dumps({"type": "text", "data": {"text": TEXT}}))
            await ws.send(json.dumps({"type": "flush"}))
            pcm = bytearray()
            while True:
                message = await asyncio.wait_for(ws.recv(), 60)
                if isinstance(message, bytes):
                    pcm.extend(message)
                    continue
                frame = json.loads(message)
                if frame["type"] == "error" or frame["data"].get("event_type") == "final":
                    break
            await ws.send(json.dumps({"type": "config", "data": {"speed": 9}}))
            refused = json.loads(await asyncio.wait_for(ws.recv(), 60))
            return bytes(pcm), refused

    pcm, refused = asyncio.run(go())
    with tts.session(tts.voices.load(VOICE), SpeakOptions(seed=6, speed=0.8)) as session:
        session.enqueue(TEXT)
        session.finish()
        want = to_pcm16(np.concatenate([f.audio for f in session]))
    np.testing.assert_array_equal(pcm16(pcm), want)
    assert refused["type"] == "error" and "speed" in refused["data"]["message"]


def test_mcp_synthesize_speed(tmp_path) -> None:
    pytest.importorskip("mcp")
    from tests.serve.test_mcp import call
    from tests.support.protohelp import TINY_ARGS

    async def steps(session):
        made = [
            await session.call_tool("synthesize", {"text": TEXT, "speed": s}) for s in (1.0, 2.0)
        ]
        bad = await session.call_tool("synthesize", {"text": TEXT, "speed": 0.1})
        return made, bad

    made, bad = call([*TINY_ARGS], steps)
    lengths = []
    for result in made:
        (audio,) = [c for c in result.content if c.type == "audio"]
        lengths.append(sf.info(io.BytesIO(base64.b64decode(audio.data))).frames)
    assert abs(lengths[0] / lengths[1] - 2) < 0.01
    assert bad.is_error and "speed" in bad.content[0].text
