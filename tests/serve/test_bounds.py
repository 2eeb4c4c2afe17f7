"""What a client cannot make the server spend: connections and their idle, header and
body time, decoded audio per upload, metric series; a cut upload is refused, not spoken.

Real uvicorn on 127.0.0.1 (the tiny pack), raw sockets where a client must misbehave;
every wait is on the server's own answer or close, with a generous deadline.
"""

from __future__ import annotations

import io
import json
import re
import socket
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import numpy as np
import pytest
import soundfile as sf

from pocketcli.serve.limits import Limits, ServeSettings
from tests.support.cli import SCRIPT
from tests.support.servehelp import TINY, serving

DEADLINE = 60.0
CLONE_WAV = TINY / "clone_prompt_24k.wav"


def _connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=DEADLINE)
    return sock


def _read_until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes (a socket timeout fails the test)."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def _quick(**limits) -> ServeSettings:
    return ServeSettings(limits=Limits(**limits))


def test_idle_and_slow_header_connections_are_closed() -> None:
    with serving(settings=_quick(header_seconds=0.5, idle_seconds=0.5)) as (url, _):
        silent = _connect(url)  # never sends a byte
        assert _read_until_closed(silent) == b""
        dripping = _connect(url)  # a header a byte at a time, never finished
        closed = False
        started = time.monotonic()
        while time.monotonic() - started < DEADLINE:
            try:
                dripping.sendall(b"X")
                dripping.settimeout(0.2)
                if dripping.recv(1) == b"":
                    closed = True
                    break
            except TimeoutError:
                continue
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
        assert closed, "a trickled header kept the connection open"
        kept = _connect(url)  # keep-alive after an answer: closed once idle
        kept.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert b"200 OK" in _read_until_closed(kept)


def test_a_body_that_does_not_arrive_in_time_is_408_in_openai_shape() -> None:
    with serving(settings=_quick(body_seconds=0.5)) as (url, _):
        sock = _connect(url)
        sock.sendall(
            b"POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b'Content-Length: 100\r\n\r\n{"model": '
        )
        reply = _read_until_closed(sock)
        head, _, body = reply.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 408"), reply[:200]
        error = json.loads(body)["error"]
        assert error["code"] == "body_timeout" and error["type"] == "invalid_request_error"


def test_connections_over_the_limit_get_503_in_openai_shape() -> None:
    with serving(settings=_quick(max_connections=2)) as (url, _):
        held = [_connect(url), _connect(url)]
        reply = httpx.get(f"{url}/healthz", timeout=DEADLINE)
        assert reply.status_code == 503
        assert reply.json()["error"]["code"] == "too_many_connections"
        for sock in held:
            sock.close()
        deadline = time.monotonic() + DEADLINE  # the held ones go: served again
        while httpx.get(f"{url}/healthz", timeout=DEADLINE).status_code != 200:
            assert time.monotonic() < deadline
            time.sleep(0.05)


def _multipart(boundary: str, recording: bytes) -> bytes:
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="text"\r\n\r\nHello there.\r\n',
        f'--{boundary}\r\nContent-Disposition: form-data; name="voice_wav"; filename="me.wav"\r\n'
        "Content-Type: audio/wav\r\n\r\n",
    ]
    return "".join(parts).encode() + recording + f"\r\n--{boundary}--\r\n".encode()


def test_a_cut_multipart_upload_is_400_not_the_default_voice() -> None:
    boundary = "pocketttsboundary42"
    body = _multipart(boundary, CLONE_WAV.read_bytes())
    headers = {"Content-Type": f"multipart/form-data; boundary={boundary}"}
    with serving() as (url, _):
        whole = httpx.post(f"{url}/tts", content=body, headers=headers, timeout=DEADLINE)
        assert whole.status_code == 200, whole.text
        cut = httpx.post(
            f"{url}/tts", content=body[: len(body) // 2], headers=headers, timeout=DEADLINE
        )
        assert cut.status_code == 400, cut.headers
        error = cut.json()["error"]
        assert error["code"] == "truncated_body" and "closing boundary" in error["message"]


def _wide_flac(seconds: float, rate: int, channels: int) -> bytes:
    """A tiny file that decodes to a lot: silence compresses to almost nothing."""
    out = io.BytesIO()
    sf.write(out, np.zeros((int(seconds * rate), channels), np.float32), rate, format="FLAC")
    return out.getvalue()


def test_an_upload_that_would_decode_to_too_many_samples_is_refused_from_its_header() -> None:
    data = _wide_flac(2.0, 96_000, 8)  # 1.5 M samples, a few kB
    assert len(data) < 200_000
    with serving(settings=_quick(max_decoded_samples=1_000_000)) as (url, _):
        reply = httpx.post(f"{url}/v1/voices", files={"file": ("wide.flac", data)}, timeout=60)
        assert reply.status_code == 400, reply.text
        message = reply.json()["error"]["message"]
        assert "96000 Hz in 8 channels" in message and "limit of 1000000" in message
        normal = httpx.post(
            f"{url}/v1/voices", files={"file": ("me.wav", CLONE_WAV.read_bytes())}, timeout=60
        )
        assert normal.status_code == 200, normal.text


def test_uploads_decode_inside_the_queue_bound() -> None:
    """Decoding is queued work: with one job running and none allowed to wait, a second
    upload is refused (503) instead of being decoded beside it."""
    data = CLONE_WAV.read_bytes()
    settings = _quick(max_queue=0, max_streams=1)
    with serving(settings=settings) as (url, _):
        variants = [data + bytes([i]) for i in range(6)]  # distinct ids: no cache hits
        with ThreadPoolExecutor(6) as pool:
            replies = list(
                pool.map(
                    lambda d: httpx.post(
                        f"{url}/v1/voices", files={"file": ("me.wav", d)}, timeout=120
                    ),
                    variants,
                )
            )
        statuses = sorted(r.status_code for r in replies)
        assert 200 in statuses and set(statuses) <= {200, 503}, statuses
        if 503 in statuses:
            busy = next(r for r in replies if r.status_code == 503)
            assert busy.json()["error"]["code"] == "queue_full"


def _series(metrics: str, name: str) -> list[str]:
    return [line for line in metrics.splitlines() if line.startswith(name + "{")]


def test_metric_labels_are_route_templates_a_fixed_set() -> None:
    with serving() as (url, _), httpx.Client(base_url=url, timeout=DEADLINE) as http:
        for i in range(20):
            assert http.get(f"/v1/models/nope-{i}").status_code == 404
            assert http.delete(f"/v1/voices/clone-{i}").status_code == 404
            assert http.get(f"/no/such/path/{i}").status_code == 404
        first = _series(http.get("/metrics").text, "pockettts_requests_total")
        for i in range(20, 60):
            http.get(f"/v1/models/nope-{i}")
            http.get(f"/no/such/path/{i}")
        again = _series(http.get("/metrics").text, "pockettts_requests_total")
    labels = {re.sub(r"\} .*", "}", line) for line in again}
    assert labels == {re.sub(r"\} .*", "}", line) for line in first} | {
        'pockettts_requests_total{endpoint="/metrics",status="200"}'
    }
    assert 'endpoint="/v1/models/{model_id}",status="404"' in "".join(labels)
    assert not any("nope-" in line or "/no/such" in line for line in again)


@pytest.mark.parametrize("flag", ["--max-queue", "--max-connections", "--max-decoded-samples"])
def test_every_bound_has_a_maximum(flag) -> None:
    import subprocess

    proc = subprocess.run(
        [SCRIPT, "serve", flag, "10000000000"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2, proc.stderr
    assert flag in proc.stderr and "less than or equal" in proc.stderr
