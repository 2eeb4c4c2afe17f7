"""First audio through Ray Serve against `pockettts serve`: what the proxy hop costs.

Starts `pockettts serve` and `pockettts serve --ray` (a local Ray, one replica) on
127.0.0.1 with the same pack, voice and --max-streams, then sends each the same
requests one at a time (OpenAI speech, `response_format: pcm`, streamed) and reports,
per server, the client's time to the first audio byte (p50, p95) and to the last.
The two servers take turns request by request, so a loaded machine slows both alike.

    python benchmarks/first_audio_ray.py                  # the tiny test pack, 30 requests
    python benchmarks/first_audio_ray.py --model-dir PACK --voice-file VOICE --requests 50
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
TINY = ROOT / "tests" / "fixtures" / "tiny"
TEXT = "Hello there. This is how long the first audio takes to come back."
START_SECONDS = 600.0
MAX_REQUESTS = 1000


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start(args: argparse.Namespace, *extra: str) -> tuple[subprocess.Popen[bytes], str]:
    script = shutil.which("pockettts") or str(Path(sys.executable).with_name("pockettts"))
    port = free_port()
    command = [
        script, "serve", "--host", "127.0.0.1", "--port", str(port), "--model-dir",
        str(args.model_dir), "--voice-file", str(args.voice_file), "--max-streams", "2", *extra,
    ]  # fmt: skip
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    listening = threading.Event()

    def drain() -> None:
        for line in proc.stderr:  # type: ignore[union-attr]
            if line.startswith(b"{") and json.loads(line).get("event") == "listening":
                listening.set()

    threading.Thread(target=drain, daemon=True).start()
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"{' '.join(command[1:3])} exited with {proc.returncode}")
        if listening.is_set():
            try:
                if httpx.get(f"{url}/readyz", timeout=5).status_code == 200:
                    return proc, url
            except httpx.HTTPError:
                pass
        time.sleep(0.2)
    sys.exit(f"not ready within {START_SECONDS:g} s")


def first_audio(http: httpx.Client, url: str, seed: int) -> tuple[float, float]:
    body = {"model": "tts-1", "input": TEXT, "response_format": "pcm", "seed": seed}
    started = time.perf_counter()
    first = None
    with http.stream("POST", f"{url}/v1/audio/speech", json=body) as response:
        if response.status_code != 200:
            sys.exit(f"{url}: HTTP {response.status_code}")
        for chunk in response.iter_raw():
            if first is None and chunk:
                first = time.perf_counter() - started
    return first or 0.0, time.perf_counter() - started


def ms(values: list[float], q: int) -> float:
    return 1000 * statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", type=Path, default=TINY / "pack")
    parser.add_argument("--voice-file", type=Path, default=TINY / "voice.safetensors")
    parser.add_argument("--requests", type=int, default=30)
    args = parser.parse_args()
    if not 2 <= args.requests <= MAX_REQUESTS:
        parser.error(f"--requests: from 2 to {MAX_REQUESTS}")
    servers = {"serve": start(args), "serve --ray": start(args, "--ray")}
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in servers}
    try:
        with httpx.Client(timeout=120) as http:
            for _, url in servers.values():
                first_audio(http, url, 0)  # warm: the first request of each pays its set-up
            for n in range(args.requests):
                for name, (_, url) in servers.items():
                    times[name].append(first_audio(http, url, n))
    finally:
        for proc, _ in servers.values():
            proc.send_signal(signal.SIGINT)
        for proc, _ in servers.values():
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
    for name, pairs in times.items():
        firsts, totals = [p[0] for p in pairs], [p[1] for p in pairs]
        row = {
            "server": name,
            "requests": len(pairs),
            "first_audio_p50_ms": round(ms(firsts, 50), 1),
            "first_audio_p95_ms": round(ms(firsts, 95), 1),
            "last_byte_p50_ms": round(ms(totals, 50), 1),
        }
        print(json.dumps(row))


if __name__ == "__main__":
    main()
