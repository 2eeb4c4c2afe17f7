"""`pockettts serve` over real sockets: OpenAI's client, pocket-tts's /tts form, voices,
limits, the queue, disconnects and metrics (uvicorn on 127.0.0.1, the tiny pack)."""

from __future__ import annotations

import io
import json
import shutil
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import av
import httpx
import numpy as np
import openai
import pytest

from pocketcli.api import PocketTTS
from pocketcli.serve.limits import Limits, ServeSettings
from tests.support.cli import run
from tests.support.servehelp import (
    LONG_TEXT,
    PACK,
    TINY,
    VOICE,
    expected_pcm,
    pcm16,
    serving,
    tiny_loader,
)

CLONE_WAV = TINY / "clone_prompt_24k.wav"


@pytest.fixture(scope="module")
def server():
    with serving() as (url, records):
        yield url, records


@pytest.fixture(scope="module")
def tts():
    return PocketTTS.open(runtime="onnx", model_dir=PACK)


@pytest.fixture(scope="module")
def voice(tts):
    return tts.voices.load(VOICE)


def client(url: str, key: str = "unused") -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key=key, max_retries=0, timeout=60)


def speech(url: str, **body) -> httpx.Response:
    payload = {"model": "tts-1", "voice": "alloy", "response_format": "pcm", **body}
    return httpx.post(f"{url}/v1/audio/speech", json=payload, timeout=60)


# -- the OpenAI API ---------------------------------------------------------------------------


def test_openai_client_gets_the_library_audio(server, tts, voice) -> None:
    url, _ = server
    text = "Hello from the OpenAI client."
    got = client(url).audio.speech.create(
        model="tts-1", voice="alloy", input=text, response_format="pcm", extra_body={"seed": 11}
    )
    want = expected_pcm(tts, text, voice, seed=11)
    np.testing.assert_array_equal(pcm16(got.content), want)
    with client(url).audio.speech.with_streaming_response.create(
        model="tts-1", voice="alloy", input=text, response_format="pcm", extra_body={"seed": 11}
    ) as streamed:
        chunks = list(streamed.iter_bytes())
    np.testing.assert_array_equal(pcm16(b"".join(chunks)), want)
    models = client(url).models.list()
    assert "tts-1" in [m.id for m in models.data]


def _decoded_samples(data: bytes) -> int:
    with av.open(io.BytesIO(data)) as container:
        return sum(f.samples for f in container.decode(container.streams.audio[0]))


@pytest.mark.parametrize("fmt", ["wav", "pcm", "flac", "mp3", "opus"])
def test_server_bytes_equal_pockettts_tts_stdout(server, fmt) -> None:
    """Same seed, same encoder as `pockettts tts -o - --format F` (one encoder for both):
    the same bytes for wav and pcm (header included), the same decoded length for all."""

    url, _ = server
    text = "Streamed the same way."
    cli = run("tts", text, "-o", "-", "--format", fmt, "--seed", "4",
              "--model-dir", str(PACK), "--voice-file", str(VOICE), "-q", check=True)  # fmt: skip
    got = speech(url, input=text, seed=4, response_format=fmt)
    assert got.status_code == 200, got.text
    if fmt in ("wav", "pcm"):
        assert got.content == cli.stdout
        assert got.headers["content-type"] == f"audio/{fmt}"
    else:
        assert _decoded_samples(got.content) == _decoded_samples(cli.stdout) > 0
    if fmt == "wav":
        assert got.content[4:8] == b"\xff\xff\xff\xff"  # RIFF size "unknown", as for any stream


@pytest.mark.parametrize("fmt", ["flac", "mp3"])
def test_flac_and_mp3_are_whole_files_for_libsndfile_and_ffmpeg(server, tts, voice, fmt) -> None:
    """Sent whole at the end, with their headers fixed up: libsndfile reads the true length
    (a streamed FLAC said "unknown" and libsndfile failed; a streamed MP3 read short)."""
    import soundfile as sf

    url, _ = server
    text = "Whole files for every decoder."
    got = speech(url, input=text, seed=5, response_format=fmt)
    assert got.status_code == 200, got.text
    want = expected_pcm(tts, text, voice, seed=5)
    with sf.SoundFile(io.BytesIO(got.content)) as sound:
        assert sound.frames == want.size
        read = sound.read(dtype="int16")
    assert _decoded_samples(got.content) >= want.size
    if fmt == "flac":
        np.testing.assert_array_equal(read, want)


@pytest.mark.parametrize("fmt", ["wav", "flac", "mp3", "opus"])
def test_compressed_formats_decode(server, tts, voice, fmt) -> None:
    url, _ = server
    text = "Compressed on the fly."
    got = speech(url, input=text, seed=2, response_format=fmt)
    assert got.status_code == 200, got.text
    with av.open(io.BytesIO(got.content)) as container:
        stream = container.streams.audio[0]
        decoded = np.concatenate([f.to_ndarray().reshape(-1) for f in container.decode(stream)])
    want = expected_pcm(tts, text, voice, seed=2)
    if fmt in ("wav", "flac"):  # lossless: exactly the PCM samples (ffmpeg reads the stream)
        assert decoded.dtype == np.int16
        np.testing.assert_array_equal(decoded, want)
    else:  # lossy, with encoder delay: about as long (opus decodes at 48 kHz)
        rate_ratio = stream.rate / tts.sample_rate
        assert abs(decoded.size / rate_ratio - want.size) < 0.1 * want.size + 2400


def test_parallel_requests_do_not_mix(server, tts, voice) -> None:
    url, _ = server
    jobs = [(f"Request number {i} has its own words.", 100 + i) for i in range(4)]
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(lambda j: speech(url, input=j[0], seed=j[1]), jobs))
    for (text, seed), response in zip(jobs, together, strict=True):
        assert response.status_code == 200
        alone = speech(url, input=text, seed=seed)
        assert response.content == alone.content
        np.testing.assert_array_equal(pcm16(response.content), expected_pcm(tts, text, voice, seed))
    assert len({r.content for r in together}) == 4


@pytest.mark.parametrize(
    "body, status, fragment",
    [
        ({"input": ""}, 400, "empty"),
        ({"input": "x" * 5000}, 400, "limit of 4096"),
        ({"input": "Hi.", "model": "whisper-1"}, 400, "unknown model"),
        ({"input": "Hi.", "response_format": "aac"}, 400, "response_format 'aac'"),
        ({"input": "Hi.", "speed": 9}, 400, "speed"),
        ({"input": "Hi.", "seed": -1}, 400, "seed must be a whole number"),
        ({"input": "Hi.", "temperature": 99}, 400, "temperature must be a number from 0 to 10"),
        ({"input": "Hi.", "voice": "/etc/passwd"}, 400, "reads no path"),
        ({"input": "Hi.", "voice": "https://example.com/v.wav"}, 400, "fetches no URL"),
        ({"input": "Hi.", "stream_format": "chunks"}, 400, "stream_format"),
        ({"voice": "alloy"}, 400, "input"),
    ],
)
def test_bad_requests_are_400_in_openai_shape(server, body, status, fragment) -> None:
    url, _ = server
    r = speech(url, **body)
    assert r.status_code == status
    assert fragment in r.json()["error"]["message"]


@pytest.mark.parametrize(
    "content, headers, fragment",
    [
        (b"[1, 2]", {"content-type": "application/json"}, "a JSON object"),
        (b"{bad", {"content-type": "application/json"}, "not valid JSON"),
        (b"input=Hi.", {"content-type": "application/x-www-form-urlencoded"}, "a JSON object"),
    ],
)
def test_a_body_that_is_no_json_object_is_said_so(server, content, headers, fragment) -> None:
    """Not just 'invalid request': an app posting a form or broken JSON learns what to send."""
    url, _ = server
    r = httpx.post(f"{url}/v1/audio/speech", content=content, headers=headers, timeout=60)
    assert r.status_code == 400 and fragment in r.json()["error"]["message"], r.text


def test_openai_client_sees_errors_and_notices(server) -> None:
    url, _ = server
    with pytest.raises(openai.BadRequestError, match="unknown voice"):
        client(url).audio.speech.create(model="tts-1", voice="nobody", input="Hi.")
    r = speech(url, input="Faster, please.", speed=1.5, instructions="Speak cheerfully.")
    assert r.status_code == 200 and "speed" not in r.headers.get("x-pockettts-notice", "")


def test_text_notices_reach_the_client(server) -> None:
    url, records = server
    r = speech(url, input="<speak>Hello <prosody rate='fast'>there</prosody>.</speak>")
    assert r.status_code == 200
    assert "ignored SSML tag <prosody>" in r.headers["x-pockettts-notice"]
    record = records.speech(r.headers["x-request-id"])
    assert any("prosody" in n for n in record["notices"])


def test_body_over_the_limit_is_413_before_reading(server) -> None:
    url, _ = server
    big = b"x" * (Limits().max_body_bytes + 1)
    r = httpx.post(f"{url}/tts", content=big, headers={"content-type": "text/plain"}, timeout=30)
    assert r.status_code == 413


# -- pocket-tts's /tts --------------------------------------------------------------------------


def test_pocket_tts_form_endpoint(server, tts, voice) -> None:
    url, _ = server
    r = httpx.post(f"{url}/tts", data={"text": "The old form.", "seed": "5"}, timeout=60)
    assert r.status_code == 200 and r.headers["content-type"] == "audio/wav"
    assert "generated_speech.wav" in r.headers["content-disposition"]
    np.testing.assert_array_equal(
        pcm16(r.content[44:]), expected_pcm(tts, "The old form.", voice, seed=5)
    )
    both = httpx.post(
        f"{url}/tts",
        data={"text": "x", "voice_url": "alba"},
        files={"voice_wav": ("a.wav", CLONE_WAV.read_bytes())},
        timeout=60,
    )
    assert both.status_code == 400 and "both" in both.json()["detail"]
    empty = httpx.post(f"{url}/tts", data={"text": "  "}, timeout=60)
    assert empty.status_code == 400 and empty.json()["detail"] == "Text cannot be empty"
    for url_voice in ("http://127.0.0.1:1/x.wav", "hf://someone/else/x.wav", "file:///etc/passwd"):
        r = httpx.post(f"{url}/tts", data={"text": "x", "voice_url": url_voice}, timeout=60)
        assert r.status_code == 400, url_voice


# -- voices -------------------------------------------------------------------------------------


def test_cloned_voice_by_id_and_by_upload(server, tts) -> None:
    url, _ = server
    data = CLONE_WAV.read_bytes()
    first = httpx.post(f"{url}/v1/voices", files={"file": ("me.wav", data)}, timeout=120)
    assert first.status_code == 200, first.text
    voice_id = first.json()["id"]
    again = httpx.post(f"{url}/v1/voices", files={"file": ("me.wav", data)}, timeout=120)
    assert again.json() == {**first.json(), "cached": True}  # the same seconds, not 0
    assert first.json()["seconds"] > 0
    cloned = tts.voices.clone(CLONE_WAV)
    want = expected_pcm(tts, "In a cloned voice.", cloned, seed=9)
    by_id = speech(url, input="In a cloned voice.", seed=9, voice={"id": voice_id})
    np.testing.assert_array_equal(pcm16(by_id.content), want)
    by_form = httpx.post(
        f"{url}/tts",
        data={"text": "In a cloned voice.", "seed": "9", "response_format": "pcm"},
        files={"voice_wav": ("me.wav", data)},
        timeout=120,
    )
    np.testing.assert_array_equal(pcm16(by_form.content), want)
    assert httpx.delete(f"{url}/v1/voices/{voice_id}").status_code == 200
    gone = speech(url, input="Hi.", voice=voice_id)
    assert gone.status_code == 400 and "upload the recording again" in gone.text
    junk = httpx.post(f"{url}/v1/voices", files={"file": ("x.wav", b"not audio" * 100)})
    assert junk.status_code == 400 and "cannot read upload 'x.wav'" in junk.text


def test_an_unreadable_upload_is_said_without_python_internals(server) -> None:
    url, _ = server
    for endpoint, field in (("/v1/voices", "file"), ("/tts", "voice_wav")):
        r = httpx.post(
            f"{url}{endpoint}",
            data={"text": "x"},
            files={field: ("notes.wav", b"plain text, not a recording\n" * 50)},
            timeout=60,
        )
        message = r.json()["error"]["message"]
        assert r.status_code == 400 and "cannot read upload 'notes.wav'" in message
        assert "Format not recognised" in message
        assert "BytesIO" not in message and " at 0x" not in message, message


def test_a_streamed_flac_from_this_server_can_be_cloned(server) -> None:
    """A FLAC streamed by the server has no length in its header; libsndfile alone
    cannot read that from memory, so an upload of one is decoded by FFmpeg (PyAV)."""
    url, _ = server
    flac = speech(url, input=LONG_TEXT[:400], seed=1, response_format="flac")
    assert flac.status_code == 200 and flac.content[:4] == b"fLaC"
    r = httpx.post(f"{url}/v1/voices", files={"file": ("reply.flac", flac.content)}, timeout=120)
    assert r.status_code == 200, r.text
    assert r.json()["id"].startswith("clone-") and r.json()["seconds"] > 1


def test_clone_limits(tmp_path) -> None:
    data = CLONE_WAV.read_bytes()
    limits = Limits(max_upload_bytes=len(data) - 1)
    with serving(settings=ServeSettings(limits=limits)) as (url, _):
        r = httpx.post(f"{url}/v1/voices", files={"file": ("me.wav", data)}, timeout=60)
        assert r.status_code == 413
    with serving(settings=ServeSettings(limits=Limits(max_clone_seconds=1.5))) as (url, _):
        r = httpx.post(f"{url}/v1/voices", files={"file": ("me.wav", data)}, timeout=60)
        assert r.status_code == 400 and "at most 1.5 s" in r.json()["error"]["message"]


def test_voice_folder_and_builtin_names(tmp_path, tts) -> None:
    pack = tmp_path / "pack"
    pack.mkdir()
    for f in PACK.iterdir():
        (pack / f.name).symlink_to(f)
    (pack / "voices").mkdir()
    shutil.copy(TINY / "clone_voice.safetensors", pack / "voices" / "alba.safetensors")
    folder = tmp_path / "voices"
    folder.mkdir()
    shutil.copy(VOICE, folder / "narrator.safetensors")
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copy(VOICE, outside / "secret.safetensors")
    (folder / "escape.safetensors").symlink_to(outside / "secret.safetensors")
    settings = ServeSettings(voice_dir=folder)
    with serving(tiny_loader(pack, voice_file=None), settings) as (url, _):
        listed = {v["id"]: v["source"] for v in httpx.get(f"{url}/v1/voices").json()["data"]}
        assert listed["narrator"] == "folder" and listed["alba"] in ("builtin", "default")
        assert "escape" not in listed
        narrator = speech(url, input="From the folder.", seed=1, voice="narrator")
        want = expected_pcm(tts, "From the folder.", tts.voices.load(VOICE), seed=1)
        np.testing.assert_array_equal(pcm16(narrator.content), want)
        alba = tts.voices.load(TINY / "clone_voice.safetensors")
        want = expected_pcm(tts, "Built in.", alba, seed=1)
        for name in ("alba", "hf://kyutai/tts-voices/alba-mackenna/casual.wav"):
            r = speech(url, input="Built in.", seed=1, voice=name)
            np.testing.assert_array_equal(pcm16(r.content), want)
        for bad in ("escape", "../outside/secret", str(outside / "secret.safetensors"),
                    "narrator.safetensors", "hf://kyutai/tts-voices/elsewhere.wav"):  # fmt: skip
            assert speech(url, input="x", voice=bad).status_code == 400, bad


def test_every_listed_voice_id_can_be_asked_for(server, tts, voice) -> None:
    """An app picks a voice from GET /v1/voices (or /readyz): the default's id is one too,
    be it a --voice-file's stem or 'none' for a pack without voices."""
    url, _ = server
    listed = httpx.get(f"{url}/v1/voices").json()["data"]
    default = next(v["id"] for v in listed if v["source"] == "default")
    assert default == httpx.get(f"{url}/readyz").json()["voice"]
    want = expected_pcm(tts, "By its listed id.", voice, seed=3)
    for ask in (default, {"id": default}):
        r = speech(url, input="By its listed id.", seed=3, voice=ask)
        assert r.status_code == 200, r.text
        np.testing.assert_array_equal(pcm16(r.content), want)
    form = httpx.post(
        f"{url}/tts", data={"text": "x", "voice_url": default, "response_format": "pcm"}, timeout=60
    )
    assert form.status_code == 200, form.text
    with serving(tiny_loader(voice_file=None)) as (bare, _):
        ids = [v["id"] for v in httpx.get(f"{bare}/v1/voices").json()["data"]]
        for name in ids:
            r = speech(bare, input="x", voice=name)
            assert r.status_code == 200, (name, r.text)


# -- queue, streaming, disconnects --------------------------------------------------------------


def paced_loader(before_frame):
    """The real tiny model, with ``before_frame(i)`` run before frame ``i`` is handed
    out, so a test can hold or slow a stream and act while it is certainly running."""
    base = tiny_loader()

    def load():
        backend = base()
        real = backend.frames

        def frames(*args, **kwargs):
            for i, frame in enumerate(real(*args, **kwargs)):
                before_frame(i)
                yield frame

        backend.frames = frames
        return backend

    return load


ONE_STREAM = ServeSettings(limits=Limits(max_streams=1))  # a held request makes the next wait


def gated_loader(gate: threading.Event):
    """Held before the second frame until ``gate`` opens."""
    return paced_loader(lambda i: gate.wait(30) if i == 1 else None)


def slow_loader(seconds_per_frame: float):
    """Slowed to a given time per frame (as a big model on a small machine)."""
    return paced_loader(lambda i: time.sleep(seconds_per_frame))


@contextmanager
def held_stream(url: str, fmt: str):
    """A speech request whose stream has started (the gated model holds it): yields its
    first chunk and the iterator of the rest."""
    body = {"model": "tts-1", "input": "Held.", "voice": "alloy", "response_format": fmt}
    with httpx.stream("POST", f"{url}/v1/audio/speech", json=body, timeout=30) as held:
        chunks = held.iter_raw()
        yield next(chunks), chunks


def test_first_audio_leaves_before_generation_ends_and_queue_bound_is_503() -> None:
    gate = threading.Event()
    settings = ServeSettings(limits=Limits(max_queue=1, max_streams=1))  # one held, one waits
    with serving(gated_loader(gate), settings) as (url, _):
        with held_stream(url, "wav") as (first, chunks):
            assert first[:4] == b"RIFF" and len(first) > 44  # header and the first frame
            with ThreadPoolExecutor(1) as pool:
                waiting = pool.submit(speech, url, input="Queued.")
                _wait_gauge(url, "pockettts_queue_depth", 1.0)
                full = speech(url, input="One too many.")
                assert full.status_code == 503 and int(full.headers["retry-after"]) >= 1
                gate.set()
                assert waiting.result().status_code == 200
            rest = b"".join(chunks)
        assert len(first + rest) > len(first)
        metrics = httpx.get(f"{url}/metrics").text
        assert 'pockettts_requests_total{endpoint="/v1/audio/speech",status="503"} 1.0' in metrics


def _gauge(url: str, name: str) -> float:
    for line in httpx.get(f"{url}/metrics", timeout=60).text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"no {name} in /metrics")


def _wait_gauge(url: str, name: str, value: float, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while _gauge(url, name) != value:
        assert time.monotonic() < deadline, f"{name} never became {value}"
        time.sleep(0.02)


def _post_raw(url: str, payload: dict) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    body = json.dumps(payload).encode()
    s = socket.create_connection((host, int(port)), timeout=60)
    s.sendall(
        b"POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + b"Content-Length: %d\r\n\r\n" % len(body)
        + body
    )
    return s


def test_disconnect_stops_generation_within_one_frame() -> None:
    """A client that hangs up mid-stream: the job stops (the active-jobs gauge falls to 0,
    the speech is not finished), within the frame being made."""
    reached = threading.Event()
    made = [0]  # frames the model was asked for

    def before(i: int) -> None:  # 288 frames at 50 ms or more each: 14 s at least
        made[0] = i + 1
        if i >= 3:
            reached.set()
            time.sleep(0.05)

    with serving(paced_loader(before)) as (url, records):
        payload = {"model": "tts-1", "voice": "alloy", "response_format": "pcm", "input": LONG_TEXT}
        with _post_raw(url, payload) as s:
            head = s.recv(65536)
            assert head.startswith(b"HTTP/1.1 200")
            request_id = head.split(b"x-request-id: ")[1].split(b"\r\n")[0].decode()
            assert reached.wait(60)
            assert _gauge(url, "pockettts_active_jobs") == 1.0
        _wait_gauge(url, "pockettts_active_jobs", 0.0)
        assert made[0] < 288, "the model made the whole speech for a client that left"
        record = records.speech(request_id)
    assert record["outcome"] == "disconnected"
    assert record["frames_after_cancel"] <= 1, record
    assert record["frames"] < 288, record  # it stopped, long before the end


def test_a_request_that_leaves_while_queued_leaves_the_queue() -> None:
    gate = threading.Event()
    with serving(gated_loader(gate), ONE_STREAM) as (url, _):
        with held_stream(url, "pcm") as (_, rest):
            s = _post_raw(url, {"model": "tts-1", "voice": "alloy", "input": "Queued."})
            _wait_gauge(url, "pockettts_queue_depth", 1.0)
            s.close()  # hangs up while waiting
            _wait_gauge(url, "pockettts_queue_depth", 0.0)  # the held job still runs
            assert _gauge(url, "pockettts_active_jobs") == 1.0
            gate.set()
            b"".join(rest)
        _wait_gauge(url, "pockettts_active_jobs", 0.0)
        outcomes = [
            line
            for line in httpx.get(f"{url}/metrics").text.splitlines()
            if line.startswith("pockettts_generations_total{")
        ]
        assert sorted(outcomes) == [
            'pockettts_generations_total{outcome="disconnected"} 1.0',
            'pockettts_generations_total{outcome="done"} 1.0',
        ]


def test_health_readiness_and_metrics(server) -> None:
    url, _ = server
    assert httpx.get(f"{url}/healthz").json() == {"status": "ok"}
    assert httpx.get(f"{url}/readyz").json()["status"] == "ready"
    speech(url, input="Counted.")
    text = httpx.get(f"{url}/metrics").text
    for name in (
        "pockettts_requests_total",
        "pockettts_queue_depth",
        "pockettts_time_to_first_audio_seconds_bucket",
        "pockettts_rtfx_count",
        "pockettts_ready 1.0",
    ):
        assert name in text


def test_cors_only_for_the_origins_given() -> None:
    settings = ServeSettings(api_key="k", cors_origins=("http://localhost:3000",))
    preflight = {
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization",
    }
    with serving(settings=settings) as (url, _):
        ok = httpx.options(f"{url}/tts", headers={"Origin": "http://localhost:3000", **preflight})
        assert ok.status_code == 200
        assert ok.headers["access-control-allow-origin"] == "http://localhost:3000"
        other = httpx.options(f"{url}/tts", headers={"Origin": "http://evil.example", **preflight})
        assert "access-control-allow-origin" not in other.headers
        r = httpx.post(
            f"{url}/tts",
            data={"text": "Hi."},
            headers={"Origin": "http://localhost:3000", "Authorization": "Bearer k"},
        )
        assert (
            r.status_code == 200
            and "x-request-id" in r.headers["access-control-expose-headers"].lower()
        )


def test_api_key(tmp_path) -> None:
    with serving(settings=ServeSettings(api_key="s3cret")) as (url, _):
        assert httpx.get(f"{url}/healthz").status_code == 200
        assert httpx.get(f"{url}/").status_code == 200
        assert httpx.get(f"{url}/v1/models").status_code == 401
        assert httpx.get(f"{url}/metrics", headers={"X-API-Key": "wrong"}).status_code == 401
        with pytest.raises(openai.AuthenticationError):
            client(url, "wrong").audio.speech.create(model="tts-1", voice="alloy", input="Hi.")
        ok = client(url, "s3cret").audio.speech.create(
            model="tts-1", voice="alloy", input="Hi.", response_format="wav"
        )
        assert ok.content[:4] == b"RIFF"


def test_request_time_limit_ends_a_long_stream() -> None:
    """The limit is generous for the first frame (a loaded machine), then every frame
    takes 0.1 s: the 288 frames would need 29 s, the limit ends the stream long before."""
    settings = ServeSettings(limits=Limits(request_seconds=4.0))
    paced = paced_loader(lambda i: time.sleep(0.1) if i >= 1 else None)
    with serving(paced, settings) as (url, records):
        with pytest.raises(httpx.RemoteProtocolError):  # the stream ends without its last chunk
            speech(url, input=LONG_TEXT)
        record = records.first_speech()
        assert record["outcome"] == "deadline" and 0 < record["frames"] < 288, record


def test_a_request_that_waits_past_its_limit_gets_503() -> None:
    gate = threading.Event()
    settings = ServeSettings(limits=Limits(request_seconds=3.0, max_streams=1))
    with serving(gated_loader(gate), settings) as (url, records):
        with held_stream(url, "pcm"):
            waited = speech(url, input="Waits in the queue.")
            assert waited.status_code == 503 and "limit of 3 s" in waited.json()["error"]["message"]
            assert int(waited.headers["retry-after"]) >= 1
            gate.set()  # the held request is past its own limit too: it ends cut short
        outcomes = [r["outcome"] for r in records.records if r["event"] == "speech"]
        assert "timeout" in outcomes
