"""Word timings from the server (issue 35 item 3): ``"words": true`` on OpenAI's speech
request (``speech.word`` events in the SSE stream, else one JSON body with the audio and
the words), on pocket-tts's ``/tts`` form, and ``word`` frames on the websocket; read with
the ``openai`` SDK, httpx and aiohttp (the websocket client livekit-plugins-pocket uses),
on a real server with a tiny pack that times words, and compared with the library's own
``synthesize(..., SpeakOptions(words=True)).words``."""

from __future__ import annotations

import base64
import json
import threading
from pathlib import Path

import httpx
import numpy as np
import openai
import pytest

from pocketcli.api import PocketTTS
from pocketcli.frontends.backend import words_of
from pocketcli.options import SpeakOptions
from pocketcli.words.captions import word_row
from tests.support.protohelp import run_async
from tests.support.servehelp import LONG_TEXT, VOICE, serving, tiny_loader
from tests.support.wordspack import build_words_pack

TEXT = "Hello there, this is the longest line. It is spoken in several chunks!"
RATE = 24000
UNAVAILABLE = (
    "words: cannot time words: the model's config has no timestamp_heads"
    " (no published head list for it)"
)


@pytest.fixture(scope="module")
def words_pack(tmp_path_factory) -> Path:
    return build_words_pack(tmp_path_factory.mktemp("serve_words_pack"))


@pytest.fixture(scope="module")
def tts(words_pack) -> PocketTTS:
    return PocketTTS.open(runtime="onnx", model_dir=words_pack)


@pytest.fixture(scope="module")
def url(words_pack):
    with serving(tiny_loader(words_pack)) as (url, _):
        yield url


def library_rows(tts: PocketTTS, text: str, seed: int, speed: float = 1.0) -> list[dict]:
    options = SpeakOptions(seed=seed, words=True, speed=speed)
    timed = tts.synthesize(text, tts.voices.load(VOICE), options)
    return [word_row(w) for w in timed.words]


def client(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0, timeout=60)


def sse(url: str, text: str, fmt: str, **extra) -> list[dict]:
    with client(url).audio.speech.with_streaming_response.create(
        model="gpt-4o-mini-tts",
        voice="alloy",
        input=text,
        response_format=fmt,
        stream_format="sse",
        extra_body=extra,
    ) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        return [
            json.loads(line[len("data: ") :])
            for line in response.iter_lines()
            if line.startswith("data: ")
        ]


def test_sse_word_events_follow_the_audio_that_ends_them(url, tts) -> None:
    events = sse(url, TEXT, "pcm", seed=3, words=True)
    assert events[-1]["type"] == "speech.audio.done"
    assert {e["type"] for e in events[:-1]} == {"speech.audio.delta", "speech.word"}
    heard = 0.0  # seconds of audio before each event
    rows = []
    for e in events[:-1]:
        if e["type"] == "speech.audio.delta":
            heard += len(base64.b64decode(e["audio"])) / 2 / RATE
            continue
        rows.append({k: e[k] for k in ("word", "start", "end")})
        assert heard >= e["end"] - 0.0005, (e, heard)  # its audio came first (to the ms)
    assert rows == library_rows(tts, TEXT, 3) and len(rows) >= 6
    # Word events interleave with the audio: the first word comes before the last delta.
    kinds = [e["type"] for e in events]
    assert kinds.index("speech.word") < len(kinds) - 1 - kinds[::-1].index("speech.audio.delta")
    # The deltas are the audio a request without words gets.
    plain = sse(url, TEXT, "pcm", seed=3)
    joined = b"".join(base64.b64decode(e["audio"]) for e in events if "audio" in e)
    assert joined == b"".join(base64.b64decode(e["audio"]) for e in plain if "audio" in e)
    assert all(e["type"] != "speech.word" for e in plain)


@pytest.mark.parametrize(("fmt", "speed"), [("wav", 1.0), ("mp3", 1.5), ("pcm", 0.75)])
def test_a_json_body_holds_the_plain_answers_bytes_and_the_librarys_words(
    url, tts, fmt, speed
) -> None:
    speech = client(url).audio.speech
    asked = dict(model="tts-1", voice="alloy", input=TEXT, response_format=fmt, speed=speed)
    timed = speech.create(**asked, extra_body={"seed": 5, "words": True})
    assert timed.response.headers["content-type"] == "application/json"
    body = json.loads(timed.content)
    assert set(body) == {"audio", "format", "words"} and body["format"] == fmt
    plain = speech.create(**asked, extra_body={"seed": 5})
    assert base64.b64decode(body["audio"]) == plain.content
    assert body["words"] == library_rows(tts, TEXT, 5, speed)
    # Times are the audio's seconds at its speed: the last word ends within the audio.
    if fmt == "pcm":
        assert body["words"][-1]["end"] <= len(plain.content) / 2 / RATE + 0.0005


def test_sse_words_at_a_speed_wait_for_an_encoder_that_holds_its_bytes(url, tts) -> None:
    """MP3 is sent whole at the end: its one delta first, then every word."""
    events = sse(url, TEXT, "mp3", seed=2, words=True, speed=1.25)
    kinds = [e["type"] for e in events]
    assert kinds[0] == "speech.audio.delta" and kinds.count("speech.audio.delta") == 1
    assert base64.b64decode(events[0]["audio"])[:2] in (b"ID", b"\xff\xfb", b"\xff\xf3")
    rows = [{k: e[k] for k in ("word", "start", "end")} for e in events[1:-1]]
    assert rows == library_rows(tts, TEXT, 2, 1.25)


def test_the_tts_form_with_words_answers_json(url, tts) -> None:
    form = {"text": TEXT, "seed": "4"}
    timed = httpx.post(f"{url}/tts", data={**form, "words": "true"}, timeout=60)
    assert timed.status_code == 200 and timed.headers["content-type"] == "application/json"
    plain = httpx.post(f"{url}/tts", data=form, timeout=60)
    body = timed.json()
    assert body["format"] == "wav" and base64.b64decode(body["audio"]) == plain.content
    assert body["words"] == library_rows(tts, TEXT, 4)


def test_a_client_that_leaves_mid_stream_still_stops_the_job(words_pack) -> None:
    """Words ride the job's bounded queue with the audio; leaving stops the generation."""
    closed = threading.Event()
    base = tiny_loader(words_pack)

    def load():
        backend = base()
        real = backend.frames

        def frames(*args, **kwargs):
            for audio in real(*args, **kwargs):
                yield audio
                if words_of(audio):  # the client hears this word, then leaves
                    closed.wait(30)

        backend.frames = frames
        return backend

    with serving(load) as (url, records):
        body = {"model": "tts-1", "input": LONG_TEXT, "stream_format": "sse", "words": True}
        body["response_format"] = "pcm"
        with httpx.stream("POST", f"{url}/v1/audio/speech", json=body, timeout=60) as answer:
            for line in answer.iter_lines():
                if line.startswith("data: ") and json.loads(line[6:])["type"] == "speech.word":
                    break
        closed.set()
        record = records.first_speech()
    assert record["outcome"] == "disconnected", record
    assert record["frames"] < 100 and record["frames_after_cancel"] <= 1, record


# -- the websocket ----------------------------------------------------------------------


def ws_turn(url: str, text: str, **config) -> list[tuple[str, object]]:
    """One turn on a raw aiohttp socket: ("audio", pcm bytes) and ("word", row) in order."""
    aiohttp = pytest.importorskip("aiohttp")

    async def go():
        async with aiohttp.ClientSession() as http:
            ws = await http.ws_connect(url.replace("http://", "ws://") + "/tts/ws")
            await ws.send_json({"type": "config", "data": config})
            got: list[tuple[str, object]] = []
            for message in [{"type": "text", "data": {"text": text}}, {"type": "flush"}]:
                await ws.send_json(message)
            while True:
                frame = await ws.receive(timeout=60)
                if frame.type == aiohttp.WSMsgType.BINARY:
                    got.append(("audio", frame.data))
                    continue
                payload = json.loads(frame.data)
                kind, data = payload["type"], payload.get("data") or {}
                if kind == "word":
                    got.append(("word", data))
                elif kind == "error":
                    got.append(("error", data))
                    return got
                elif kind == "event" and data["event_type"] == "final":
                    return got

    return run_async(go())


def ws_rows(got: list[tuple[str, object]], rate: int) -> list[dict]:
    heard, rows = 0.0, []
    for kind, value in got:
        if kind == "audio":
            heard += len(value) / 2 / rate
        else:
            assert kind == "word", value
            rows.append(value)
            # after its audio (held until the resampler gives it out)
            assert heard >= value["end"] - 0.0005, (value, heard)
    return rows


def test_websocket_word_frames_come_between_the_audio_in_order(url, tts) -> None:
    sentence = "Hello there, this is the longest line, said in one breath."
    got = ws_turn(url, sentence, seed=6, words=True)
    rows = ws_rows(got, RATE)
    assert rows == library_rows(tts, sentence, 6) and len(rows) >= 6
    kinds = [k for k, _ in got]  # interleaved: the first word before the last audio
    assert kinds.index("word") < max(i for i, k in enumerate(kinds) if k == "audio")
    plain = ws_turn(url, sentence, seed=6)
    audio = b"".join(v for k, v in got if k == "audio")
    assert audio == b"".join(v for k, v in plain if k == "audio")
    assert len(audio) > RATE
    # Resampled to 16 kHz the times are the same seconds.
    resampled = ws_turn(url, sentence, seed=6, words=True, sample_rate=16000)
    assert ws_rows(resampled, 16000) == rows
    slow = ws_turn(url, sentence, seed=6, words=True, speed=0.8)
    assert ws_rows(slow, RATE) == library_rows(tts, sentence, 6, 0.8)


def test_the_livekit_plugin_asking_for_words_hears_the_same_audio(url) -> None:
    """Word frames are frames its protocol passes over: its audio is unchanged."""
    aiohttp = pytest.importorskip("aiohttp")

    from tests.serve.test_websocket import config, protocol, texts

    async def speak(extra: dict) -> bytes:
        async with aiohttp.ClientSession() as http:

            async def connect():
                return await http.ws_connect(url.replace("http://", "ws://") + "/tts/ws")

            socket = protocol.SessionSocket(connect, timeout=60)
            out = bytearray()
            try:
                await socket.speak(config(seed=8, **extra), texts(TEXT), out.extend, timeout=60)
            finally:
                await socket.aclose()
            return bytes(out)

    with_words = run_async(speak({"words": True}))
    assert with_words == run_async(speak({})) and len(with_words) > RATE


# -- a model that cannot time words -----------------------------------------------------


@pytest.fixture(scope="module")
def plain_url():
    with serving() as (url, _):  # the committed tiny pack: its config lists no heads
        yield url


@pytest.mark.parametrize("stream_format", ["audio", "sse"])
def test_a_model_that_cannot_time_words_refuses_before_any_audio(plain_url, stream_format) -> None:
    body = {"model": "tts-1", "input": TEXT, "words": True, "stream_format": stream_format}
    answer = httpx.post(f"{plain_url}/v1/audio/speech", json=body, timeout=60)
    assert answer.status_code == 400
    assert answer.json()["error"] == {
        "message": UNAVAILABLE,
        "type": "invalid_request_error",
        "param": "words",
        "code": "words_unavailable",
    }
    form = httpx.post(f"{plain_url}/tts", data={"text": TEXT, "words": "true"}, timeout=60)
    assert form.status_code == 400 and form.json()["detail"] == UNAVAILABLE


def test_a_websocket_config_asking_for_words_is_refused_and_the_socket_serves_on(
    plain_url,
) -> None:
    aiohttp = pytest.importorskip("aiohttp")

    async def go():
        async with aiohttp.ClientSession() as http:
            ws = await http.ws_connect(plain_url.replace("http://", "ws://") + "/tts/ws")
            await ws.send_json({"type": "config", "data": {"words": True}})
            refused = json.loads((await ws.receive(timeout=60)).data)
            await ws.send_json({"type": "config", "data": {"words": False}})
            accepted = json.loads((await ws.receive(timeout=60)).data)
            return refused, accepted

    refused, accepted = run_async(go())
    assert refused == {
        "type": "error",
        "data": {"message": UNAVAILABLE + "; it still has no config", "code": "words_unavailable"},
    }
    assert accepted["data"]["event_type"] == "config_accepted"


def test_a_word_past_the_audio_sent_still_goes_out_at_the_turns_end() -> None:
    """A stretched or resampled length may fall a sample or two short of a word's end:
    the word waits for the audio, and the turn's end sends it all the same."""
    from pocketcli.frontends.backend import carried
    from pocketcli.serve.routes.ws import _TurnAudio
    from pocketcli.words.align import Word

    out = _TurnAudio(RATE, 16000)
    last = Word("end", 0.0, 0.0801, 0)  # 80 ms of audio, a word to 80.1 ms
    pcm, due = out.frame(carried(np.zeros(1920, np.float32), [last]))
    assert due == [] and len(pcm) < 1280 * 2  # the resampler holds some back
    tail, rest = out.end()
    assert rest == [last] and (len(pcm) + len(tail)) // 2 == 1280
    out.close()
