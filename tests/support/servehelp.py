"""Real servers for the serve tests: uvicorn on 127.0.0.1 in a thread, or `pockettts serve`
as a subprocess, each on a port the OS picks."""

from __future__ import annotations

import json
import logging
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import numpy as np

from pocketcli.frontends.backend import Backend, load_backend
from pocketcli.options import SpeakOptions
from pocketcli.serve.limits import Limits, ServeSettings
from pocketcli.serve.server import bind, build
from tests.support.paths import FIXTURES

TINY = FIXTURES / "tiny"
PACK = TINY / "pack"
VOICE = TINY / "voice.safetensors"
LONG_TEXT = " ".join(
    f"Sentence number {i} goes on for a while, so the model has some work to do." for i in range(50)
)


def tiny_loader(pack: Path = PACK, voice_file: Path | None = VOICE) -> Callable[[], Backend]:
    from pocketcli.cli.model_options import ModelFlags

    choice = ModelFlags(model_dir=pack, runtime="onnx", precision="fp32", offline=True).request(
        quiet=True
    )
    return lambda: load_backend(choice, None, voice_file)


@dataclass
class LogRecords(logging.Handler):
    """Keeps the server's structured log records (the ``extra`` fields)."""

    records: list[dict] = field(default_factory=list)

    def __post_init__(self) -> None:
        logging.Handler.__init__(self)

    def __hash__(self) -> int:
        return id(self)

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(dict(record.__dict__, event=record.getMessage()))

    def first_speech(self, timeout: float = 60.0) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for r in list(self.records):
                if r["event"] == "speech":
                    return r
            time.sleep(0.02)
        raise AssertionError("no speech log record")

    def speech(self, request_id: str, timeout: float = 60.0) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for r in list(self.records):
                if r["event"] == "speech" and r.get("request_id") == request_id:
                    return r
            time.sleep(0.02)
        raise AssertionError(f"no log record for request {request_id}")


@contextmanager
def serving(
    load: Callable[[], Backend] | None = None, settings: ServeSettings | None = None
) -> Iterator[tuple[str, LogRecords]]:
    """The app under uvicorn on 127.0.0.1:<free port>, ready (model loaded) when yielded."""
    # One request spoken at a time unless a test says otherwise: the queue's tests count
    # on it (the server's own default is defaults.MAX_STREAMS).
    settings = settings or ServeSettings(limits=Limits(max_streams=1))
    sock = bind("127.0.0.1", 0)
    server = build(load or tiny_loader(), settings, sock)
    records = LogRecords()
    log = logging.getLogger("pockettts.serve")
    log.addHandler(records)
    log.setLevel(logging.INFO)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    try:
        wait_ready(url)
        yield url, records
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()
        log.removeHandler(records)


def wait_ready(url: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise AssertionError(f"{url} did not become ready in {timeout} s")


@contextmanager
def spawn(
    script: str, *args: str, env: dict | None = None
) -> Iterator[tuple[subprocess.Popen, str]]:
    """`pockettts serve --port 0 ...` as a child process; yields it and its URL."""
    proc = subprocess.Popen(
        [script, "serve", "--port", "0", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        assert proc.stderr is not None
        url = None
        deadline = time.monotonic() + 60
        while url is None and time.monotonic() < deadline:
            line = proc.stderr.readline()
            if not line:
                break
            entry = json.loads(line)
            if entry.get("event") == "listening":
                url = entry["url"]
        assert url is not None, f"no 'listening' line; exit {proc.poll()}"
        try:
            wait_ready(url)
        except AssertionError:
            proc.kill()
            raise AssertionError(f"not ready: {proc.stderr.read().decode()[-2000:]}") from None
        yield proc, url
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(30)


def pcm16(data: bytes) -> np.ndarray:
    return np.frombuffer(data, "<i2")


def expected_pcm(tts, text: str, voice, seed: int, temperature: float | None = None) -> np.ndarray:
    """What the library streams for this text (output chain's causal filters included,
    as ``pockettts tts -o -`` streams it), as 16-bit PCM."""
    from pocketcli.audio.wav import to_pcm16

    frames = [
        f.audio
        for f in tts.stream(text, voice, options=SpeakOptions(seed=seed, temperature=temperature))
    ]
    return to_pcm16(np.concatenate(frames))
