"""OpenAI's `stream_format: "sse"` on /v1/audio/speech, read with the `openai` SDK's own
`with_streaming_response.create(..., stream_format="sse")`, as LiveKit's OpenAI plugin
asks for it."""

from __future__ import annotations

import base64
import json

import numpy as np
import openai
import pytest

from pocketcli.api import PocketTTS
from tests.support.servehelp import PACK, VOICE, expected_pcm, pcm16, serving

FRAME = 1920


@pytest.fixture(scope="module")
def url():
    with serving() as (url, _):
        yield url


def client(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0, timeout=60)


def sse_events(url: str, text: str, fmt: str, seed: int) -> tuple[str, list[dict]]:
    with client(url).audio.speech.with_streaming_response.create(
        model="gpt-4o-mini-tts",
        voice="alloy",
        input=text,
        response_format=fmt,
        stream_format="sse",
        extra_body={"seed": seed},
    ) as response:
        kind = response.headers["content-type"]
        events = [
            json.loads(line[len("data: ") :])
            for line in response.iter_lines()
            if line.startswith("data: ")
        ]
    return kind, events


def test_sse_deltas_are_the_audio_as_it_is_made_then_done_with_usage(url) -> None:
    tts = PocketTTS.open(runtime="onnx", model_dir=PACK)
    text = "Hello from the events. And a second sentence."
    kind, events = sse_events(url, text, "pcm", seed=5)
    assert kind.startswith("text/event-stream")
    *deltas, done = events
    assert {e["type"] for e in deltas} == {"speech.audio.delta"}
    assert len(deltas) > 2  # frame by frame, not the whole file at the end
    audio = b"".join(base64.b64decode(e["audio"]) for e in deltas)
    want = expected_pcm(tts, text, tts.voices.load(VOICE), seed=5)
    np.testing.assert_array_equal(pcm16(audio), want)
    assert done["type"] == "speech.audio.done"
    assert done["usage"] == {
        "input_tokens": len(text),
        "output_tokens": want.size // FRAME,
        "total_tokens": len(text) + want.size // FRAME,
    }


def test_sse_wav_deltas_join_into_the_bytes_stream_format_audio_sends(url) -> None:
    text = "Same bytes either way."
    _, events = sse_events(url, text, "wav", seed=9)
    joined = b"".join(base64.b64decode(e["audio"]) for e in events[:-1])
    plain = client(url).audio.speech.create(
        model="tts-1",
        voice="alloy",
        input=text,
        response_format="wav",
        extra_body={"seed": 9},
    )
    assert joined == plain.content and joined.startswith(b"RIFF")


def test_sse_errors_before_the_audio_are_http_errors_as_before(url) -> None:
    speech = client(url).audio.speech.with_streaming_response
    with (
        pytest.raises(openai.BadRequestError) as caught,
        speech.create(model="tts-1", voice="/etc/passwd", input="Hi.", stream_format="sse"),
    ):
        pass
    assert "reads no path" in caught.value.message


def test_a_failure_after_the_first_event_is_an_error_event_and_a_clean_end() -> None:
    import asyncio

    from pocketcli.serve.sse import SpeechEvents

    async def audio():  # each frame's bytes and the words it ends
        yield b"\x01\x00", ()
        raise RuntimeError("the stream's own abort")

    async def go() -> list[bytes]:
        wrapped = SpeechEvents(3).wrap(audio(), lambda: 1, lambda: "stopped: shutdown")
        return [chunk async for chunk in wrapped]

    chunks = asyncio.run(go())
    events = [json.loads(c.decode().removeprefix("data: ")) for c in chunks]
    assert [e["type"] for e in events] == ["speech.audio.delta", "error"]
    assert events[1]["error"]["message"] == "stopped: shutdown"
    assert all(c.endswith(b"\n\n") for c in chunks)
