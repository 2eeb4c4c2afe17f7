"""`pockettts serve` as users run it: a real process, its flags, its errors, and SIGTERM."""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import sys

import httpx
import numpy as np

from pocketcli.api import PocketTTS
from pocketcli.packs.manifest import seal
from tests.support.cli import SCRIPT, run
from tests.support.paths import ROOT
from tests.support.servehelp import LONG_TEXT, PACK, VOICE, expected_pcm, pcm16, spawn

TINY_ARGS = ("--model-dir", str(PACK), "--voice-file", str(VOICE))


def test_without_the_extra_one_line_names_it() -> None:
    code = (
        "import sys; sys.modules['fastapi'] = None; sys.argv = ['pockettts', 'serve'];"
        "from pocketcli.cli.entry import run; run()"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert r.returncode == 1
    lines = r.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and "pip install 'pockettts[serve]'" in lines[0], lines


def test_bad_flags_fail_before_loading(tmp_path) -> None:
    for args, code, fragment in (
        (["--voice-dir", str(tmp_path / "missing")], 1, "voice folder not found"),
        (["--voice-dir", str(VOICE)], 1, f"--voice-dir is a file, not a folder: {VOICE}"),
        (["--voice-file", str(tmp_path / "none.safetensors")], 1, "voice file not found"),
        (["--port", "70000"], 2, "--port"),
        (["--language", "klingon"], 2, "klingon"),
    ):
        r = run("serve", *args)
        assert r.returncode == code, (args, r.stderr)
        assert fragment in r.stderr.decode() and b"Traceback" not in r.stderr


def test_a_pack_that_cannot_load_ends_the_server_with_one_line(tmp_path) -> None:
    broken = tmp_path / "pack"
    shutil.copytree(PACK, broken)
    (broken / "flowlm_step.onnx").write_bytes(b"not an onnx graph")
    r = run("serve", "--port", "0", "--model-dir", str(broken))
    assert r.returncode == 1
    assert b"Traceback" not in r.stderr
    last = r.stderr.decode().strip().splitlines()[-1]
    assert last.startswith("pockettts: error: "), last
    assert "could not be loaded" in last or str(broken) in last, last


def _post_raw(url: str, payload: dict, rcvbuf: int | None = None) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    s = socket.socket()
    if rcvbuf is not None:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.connect((host, int(port)))
    body = json.dumps(payload).encode()
    s.sendall(
        b"POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    return s


def _read_all(s: socket.socket, timeout: float) -> bytes:
    s.settimeout(timeout)
    parts = []
    while chunk := s.recv(65536):
        parts.append(chunk)
    return b"".join(parts)


def _dechunk(raw: bytes) -> tuple[bytes, bool]:
    """The body of a chunked HTTP response, and whether its last chunk arrived."""
    body = raw.split(b"\r\n\r\n", 1)[1]
    out = []
    while body:
        size_line, _, rest = body.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            return b"".join(out), True
        out.append(rest[:size])
        body = rest[size + 2 :]
    return b"".join(out), False


def test_sigterm_lets_an_inflight_request_finish() -> None:
    tts = PocketTTS.open(runtime="onnx", model_dir=PACK)
    want = expected_pcm(tts, LONG_TEXT, tts.voices.load(VOICE), seed=3)
    with spawn(SCRIPT, *TINY_ARGS, "--shutdown-timeout", "20") as (proc, url):
        payload = {"model": "tts-1", "voice": "alloy", "input": LONG_TEXT, "seed": 3}
        s = _post_raw(url, {**payload, "response_format": "pcm"})
        head = s.recv(1024)
        assert head.startswith(b"HTTP/1.1 200")
        proc.send_signal(signal.SIGTERM)
        raw = head + _read_all(s, 60)
        s.close()
        assert proc.wait(60) == 143
        assert proc.stderr is not None
        logged = proc.stderr.read().decode()
        assert "error:" not in logged  # a normal stop, not a failure
        stopped = [json.loads(line) for line in logged.splitlines() if line.startswith("{")]
        assert [e["outcome"] for e in stopped if e["event"] == "speech"] == ["done"]
        assert stopped[-1]["event"] == "stopped" and stopped[-1]["signal"] == "SIGTERM"
        body, complete = _dechunk(raw)
        assert complete
        np.testing.assert_array_equal(pcm16(body), want)
        try:
            httpx.get(f"{url}/healthz", timeout=2)
            raise AssertionError("still accepting connections after SIGTERM")
        except httpx.TransportError:
            pass


def test_sigterm_cancels_a_stalled_stream_by_the_deadline() -> None:
    text = " ".join([LONG_TEXT] * 12)
    args = (*TINY_ARGS, "--shutdown-timeout", "2", "--max-chars", "60000")
    with spawn(SCRIPT, *args) as (proc, url):
        payload = {"model": "tts-1", "voice": "alloy", "input": text, "response_format": "pcm"}
        s = _post_raw(url, payload, rcvbuf=4096)  # a client that stops reading
        assert s.recv(1024).startswith(b"HTTP/1.1 200")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 143  # the stalled stream did not hold it past the deadline
        s.close()
        assert proc.stderr is not None
        logged = [
            json.loads(line) for line in proc.stderr.read().splitlines() if line.startswith(b"{")
        ]
        speech = [e for e in logged if e["event"] == "speech"]
        assert speech and speech[0]["outcome"] == "cancelled", speech


def test_builtin_voices_from_the_store_and_nothing_else_fetched(tmp_path) -> None:
    """A pack that says it is english takes the catalogue's voices from a stand-in Hub:
    a built-in name and the hf:// address of its recording give the same voice; any
    other hf:// or https address fetches nothing."""
    from tests.support.fakehub import FakeHub, add_kyutai, running, subprocess_env

    pack = tmp_path / "pack"
    pack.mkdir()
    for f in PACK.iterdir():
        if f.name != "pack.json":
            (pack / f.name).symlink_to(f)
    manifest = json.loads((PACK / "pack.json").read_text())
    manifest["source"]["language"] = "english"
    (pack / "pack.json").write_text(json.dumps(seal(manifest)))
    hub = FakeHub()
    add_kyutai(hub)
    with (
        running(hub),
        spawn(SCRIPT, "--model-dir", str(pack), env=subprocess_env(hub, tmp_path)) as (_, url),
    ):
        voices = {v["id"]: v["source"] for v in httpx.get(f"{url}/v1/voices").json()["data"]}
        assert voices["alba"] == "default" and voices["anna"] == "builtin"
        body = {"model": "tts-1", "input": "Hello.", "seed": 1, "response_format": "pcm"}
        by_name = httpx.post(f"{url}/v1/audio/speech", json={**body, "voice": "alba"}, timeout=60)
        form = {"text": "Hello.", "seed": "1", "response_format": "pcm"}
        recording = "hf://kyutai/tts-voices/alba-mackenna/casual.wav"
        by_url = httpx.post(f"{url}/tts", data={**form, "voice_url": recording}, timeout=60)
        assert by_name.status_code == by_url.status_code == 200
        assert by_name.content == by_url.content
        assert any("embeddings/alba.safetensors" in r.path for r in hub.requests())
        hub.clear_log()
        for other in ("hf://kyutai/tts-voices/other/voice.wav", f"{hub.url}/raw/tiny.yaml"):
            r = httpx.post(f"{url}/tts", data={"text": "x", "voice_url": other}, timeout=60)
            assert r.status_code == 400, other
        assert hub.requests() == []


def test_api_key_from_the_environment() -> None:
    import os

    env = {**os.environ, "POCKETTTS_API_KEY": "from-env"}
    with spawn(SCRIPT, *TINY_ARGS, env=env) as (_, url):
        assert httpx.get(f"{url}/v1/models", timeout=10).status_code == 401
        ok = httpx.get(f"{url}/v1/models", headers={"Authorization": "Bearer from-env"})
        assert ok.status_code == 200


def test_a_voices_bin_default_voice_is_picked_with_v(tmp_path) -> None:
    """As with tts: the advice "choose one with --voice NAME" must not meet "keep one"."""
    from tests.support import tensorfiles

    bank = tmp_path / "voices.bin"
    voices = {"cosette": np.zeros((3, 64), np.float32), "marius": np.ones((4, 64), np.float32)}
    bank.write_bytes(tensorfiles.voices_bin(voices))
    r = run("serve", "--model-dir", str(PACK), "--voice-file", str(bank))
    assert r.returncode == 1 and b"choose one with --voice NAME" in r.stderr, r.stderr
    with spawn(SCRIPT, "--model-dir", str(PACK), "--voice-file", str(bank), "-v", "marius") as (
        _,
        url,
    ):
        assert httpx.get(f"{url}/readyz", timeout=10).json()["voice"] == "marius"


# -- the load-test script -------------------------------------------------------------------
LOAD_SCRIPT = str(ROOT / "benchmarks" / "load_serve.py")


def test_load_script_bad_counts_are_a_one_line_usage_error() -> None:
    for args in (["--clients", "x"], ["--clients", "0"], ["--clients", "2", "--seconds", "0"]):
        r = subprocess.run(
            [sys.executable, LOAD_SCRIPT, *args], capture_output=True, text=True, timeout=60
        )
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2, (args, r.stderr)
        assert "Traceback" not in r.stderr and args[-2] in lines[-1], (args, r.stderr)


def test_load_script_short_run_has_no_errors_below_the_bound() -> None:
    r = subprocess.run(
        [sys.executable, LOAD_SCRIPT, "--clients", "2", "--seconds", "1", "--max-queue", "1"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    row = next(line.split() for line in r.stdout.splitlines() if line.split()[:1] == ["2"])
    ok, busy, other = (int(v) for v in row[5:8])
    assert ok > 0 and busy == 0 and other == 0, r.stdout
