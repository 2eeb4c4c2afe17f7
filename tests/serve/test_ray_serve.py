"""`pockettts serve --ray ADDRESS` on a real local Ray the module starts on 127.0.0.1 (two
CPUs, two replicas of the tiny pack, two streams each) and stops: real clients (the
`openai` SDK, plain and SSE; pocket-tts's form; the websocket) through Ray Serve's proxy
hear the bytes of the one-process server; a voice cloned through one replica is spoken
by both; a replica killed with Ray's own API mid-stream costs its client a clean error
within a deadline, and the next requests are answered."""

from __future__ import annotations

import json
import time

import httpx
import pytest

ray = pytest.importorskip("ray")
pytest.importorskip("ray.serve")
openai = pytest.importorskip("openai")

from pocketcli.serve.limits import Limits, ServeSettings  # noqa: E402
from tests.support.cli import run  # noqa: E402
from tests.support.rayhelp import (  # noqa: E402
    START_SECONDS,
    RayServer,
    free_port,
    local_cluster,
    running_replicas,
)
from tests.support.servehelp import (  # noqa: E402
    LONG_TEXT,
    PACK,
    TINY,
    VOICE,
    serving,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

STREAMS = 2
REPLICAS = 2
DEATH_SECONDS = 60.0  # a killed replica's client hears so within this
TINY_ARGS = ("--model-dir", str(PACK), "--voice-file", str(VOICE))
KEY = "ray-test-key"
MAX_CHARS = 4000
AUTH = {"Authorization": f"Bearer {KEY}"}


@pytest.fixture(scope="module")
def cluster():
    with local_cluster(REPLICAS) as address:
        yield address


@pytest.fixture(scope="module")
def ray_url(cluster):
    server = RayServer(
        cluster,
        *TINY_ARGS,
        "--min-replicas",
        str(REPLICAS),
        "--max-streams",
        str(STREAMS),
        "--shutdown-timeout",
        "5",
        "--api-key",
        KEY,
        "--max-chars",
        str(MAX_CHARS),
    )
    try:
        server.wait()
        yield server.url
    finally:
        server.stop()


@pytest.fixture(scope="module")
def plain_url():
    settings = ServeSettings(limits=Limits(max_streams=STREAMS, max_chars=MAX_CHARS), api_key=KEY)
    with serving(settings=settings) as (url, _):
        yield url


def client(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key=KEY, max_retries=0, timeout=120)


def speech(url: str, text: str, seed: int, voice: str = "alloy", fmt: str = "wav") -> bytes:
    return (
        client(url)
        .audio.speech.create(
            model="tts-1", voice=voice, input=text, response_format=fmt, extra_body={"seed": seed}
        )
        .content
    )


def sse(url: str, text: str, seed: int) -> list[dict]:
    with client(url).audio.speech.with_streaming_response.create(
        model="tts-1",
        voice="alloy",
        input=text,
        response_format="pcm",
        stream_format="sse",
        extra_body={"seed": seed},
    ) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        return [json.loads(line[6:]) for line in response.iter_lines() if line.startswith("data: ")]


def replica_of(response: httpx.Response) -> str:
    return response.headers["x-pockettts-replica"]


def test_the_openai_sdk_hears_the_bytes_of_the_one_process_server(ray_url, plain_url) -> None:
    for text, seed, fmt in (("Hello from the cluster.", 3, "wav"), ("A second one.", 8, "mp3")):
        got = speech(ray_url, text, seed, fmt=fmt)
        assert len(got) > 1000 and got == speech(plain_url, text, seed, fmt=fmt)
    events = sse(ray_url, "Events, frame by frame. Then done.", 5)
    assert len(events) > 3 and events[-1]["type"] == "speech.audio.done"
    assert events == sse(plain_url, "Events, frame by frame. Then done.", 5)
    form = {"text": "The form of pocket-tts.", "seed": "4"}
    got = httpx.post(f"{ray_url}/tts", data=form, headers=AUTH, timeout=120)
    assert got.status_code == 200, got.text
    want = httpx.post(f"{plain_url}/tts", data=form, headers=AUTH, timeout=120)
    assert got.content == want.content


def test_the_websocket_through_rays_proxy_speaks_as_the_one_process_server(
    ray_url, plain_url
) -> None:
    from tests.serve.test_websocket import config, texts, with_socket
    from tests.support.protohelp import run_async

    def turn(url: str) -> bytes:
        heard = bytearray()

        async def steps(sock):
            await sock.speak(
                config(seed=6), texts("Over the socket. Twice."), heard.extend, timeout=120
            )

        run_async(with_socket(url.replace("http://", "ws://") + "/tts/ws", steps, KEY))
        return bytes(heard)

    got = turn(ray_url)
    assert len(got) > 1000 and got == turn(plain_url)


def test_a_voice_cloned_through_one_replica_is_spoken_by_every_replica(ray_url, plain_url) -> None:
    recording = (TINY / "clone_prompt_24k.wav").read_bytes()
    files = {"file": ("me.wav", recording, "audio/wav")}
    made = httpx.post(f"{ray_url}/v1/voices", files=files, headers=AUTH, timeout=120)
    assert made.status_code == 200, made.text
    voice = made.json()["id"]
    again = httpx.post(f"{plain_url}/v1/voices", files=files, headers=AUTH, timeout=120)
    assert again.json()["id"] == voice
    want = speech(plain_url, "My own voice.", 2, voice=voice)
    body = {"model": "tts-1", "voice": voice, "input": "My own voice.", "seed": 2}
    body["response_format"] = "wav"
    heard_by: set[str] = set()
    for _ in range(30):  # Ray picks the replica: ask until both have answered
        got = httpx.post(f"{ray_url}/v1/audio/speech", json=body, headers=AUTH, timeout=120)
        assert got.status_code == 200, got.text
        assert got.content == want
        heard_by.add(replica_of(got))
        if len(heard_by) == REPLICAS:
            break
    assert len(heard_by) == REPLICAS, heard_by
    listed = httpx.get(f"{ray_url}/v1/voices", headers=AUTH, timeout=60).json()["data"]
    assert voice in [v["id"] for v in listed]
    # forgotten through one replica: forgotten by every one
    gone = httpx.delete(f"{ray_url}/v1/voices/{voice}", headers=AUTH, timeout=60)
    assert gone.status_code == 200, gone.text
    refused_by: set[str] = set()
    for _ in range(30):
        got = httpx.post(f"{ray_url}/v1/audio/speech", json=body, headers=AUTH, timeout=120)
        assert got.status_code in (400, 404) and "no cloned voice" in got.text, got.text
        refused_by.add(replica_of(got))
        if len(refused_by) == REPLICAS:
            break
    assert len(refused_by) == REPLICAS, refused_by


def test_the_api_key_and_the_limits_hold_on_every_replica(ray_url) -> None:
    body = {"model": "tts-1", "voice": "alloy", "input": "Who are you?"}
    answered_by: set[str] = set()
    for _ in range(30):
        refused = httpx.post(f"{ray_url}/v1/audio/speech", json=body, timeout=60)
        assert refused.status_code == 401, refused.text
        long = {**body, "input": "x" * (MAX_CHARS + 1)}
        too_long = httpx.post(f"{ray_url}/v1/audio/speech", json=long, headers=AUTH, timeout=60)
        assert too_long.status_code == 400 and str(MAX_CHARS) in too_long.text, too_long.text
        answered_by |= {replica_of(refused), replica_of(too_long)}
        if len(answered_by) == REPLICAS:
            break
    assert len(answered_by) == REPLICAS, answered_by


def _replica_actor(replica: str):
    for entry in ray.util.list_named_actors(all_namespaces=True):
        if entry["namespace"] == "serve" and entry["name"].endswith(f"#{replica}"):
            return ray.get_actor(entry["name"], namespace="serve")
    raise AssertionError(f"no replica actor named for {replica}")


def test_a_replica_killed_mid_stream_costs_its_client_a_clean_error_only(ray_url) -> None:
    body = {"model": "tts-1", "voice": "alloy", "input": LONG_TEXT, "response_format": "pcm"}
    started = None
    with (
        httpx.Client(timeout=DEATH_SECONDS, headers=AUTH) as http,
        http.stream("POST", f"{ray_url}/v1/audio/speech", json=body) as response,
    ):
        assert response.status_code == 200
        chunks = response.iter_bytes()
        first = next(chunks)
        assert first
        ray.kill(_replica_actor(replica_of(response)), no_restart=True)
        started = time.monotonic()
        with pytest.raises(httpx.HTTPError):
            for _ in chunks:  # the rest of the stream, cut where the replica died
                assert time.monotonic() - started < DEATH_SECONDS, "the stream went on"
    assert time.monotonic() - started < DEATH_SECONDS
    # New requests are answered (by the replica left, and by the one Ray starts)
    for _ in range(3):
        got = httpx.post(
            f"{ray_url}/v1/audio/speech",
            json={**body, "input": "Still here."},
            headers=AUTH,
            timeout=120,
        )
        assert got.status_code == 200 and len(got.content) > 1000, got.text
    deadline = time.monotonic() + START_SECONDS
    while running_replicas() != REPLICAS:  # Ray Serve starts one in the dead one's place
        assert time.monotonic() < deadline, f"{running_replicas()} replica(s) running"
        time.sleep(0.25)


def test_an_unreachable_cluster_is_one_line_and_exit_1() -> None:
    port = free_port()  # nothing listens there
    r = run("serve", "--ray", f"127.0.0.1:{port}", *TINY_ARGS, timeout=120)
    lines = r.stderr.decode().strip().splitlines()
    assert r.returncode == 1, r.stderr
    assert len(lines) == 1 and lines[0].startswith("pockettts: error: "), lines
    assert f"127.0.0.1:{port}" in lines[0] and "Traceback" not in lines[0]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--config", "missing.yaml"), "config not found: missing.yaml"),
        (("--model-dir", "missing"), "model pack not found: missing"),
        (("--model-dir", str(PACK), "--voice-dir", "missing"), "voice folder not found: missing"),
    ],
)
def test_a_path_that_is_not_there_is_one_line_before_ray_is_asked(tmp_path, args, said) -> None:
    port = free_port()  # nothing listens there: asked, Ray would be the error
    r = run("serve", "--ray", f"127.0.0.1:{port}", *args, cwd=tmp_path, timeout=120)
    lines = r.stderr.decode().strip().splitlines()
    assert r.returncode == 1, r.stderr
    assert lines == [f"pockettts: error: {said}"], lines


def test_a_cluster_that_refuses_the_application_is_one_line_and_exit_1(cluster, ray_url) -> None:
    for args, fragment in (
        (
            ("--min-replicas", str(REPLICAS + 1)),
            "no room for 3 replica(s) of 1 CPU; lower --min-replicas",
        ),
        ((), "already serves an application"),  # the module's own: a second would replace it
    ):
        r = run(
            "serve", "--ray", cluster, "--port", str(free_port()), *args, *TINY_ARGS, timeout=120
        )
        lines = r.stderr.decode().strip().splitlines()
        assert r.returncode == 1, r.stderr
        assert len(lines) == 1 and fragment in lines[0], lines
    assert httpx.get(f"{ray_url}/readyz", timeout=60).status_code == 200  # still serving


def test_replica_counts_without_ray_are_a_usage_error() -> None:
    r = run("serve", "--min-replicas", "2", *TINY_ARGS, timeout=60)
    assert r.returncode == 2 and b"--ray" in r.stderr, r.stderr
    r = run("serve", "--ray", "--min-replicas", "3", "--max-replicas", "2", *TINY_ARGS, timeout=60)
    assert r.returncode == 2 and b"--max-replicas" in r.stderr, r.stderr
