"""Load test of `pockettts serve` on 127.0.0.1: N concurrent clients for T seconds.

Starts the server as a child process (`pockettts serve --port 0`), then for each
client count runs that many clients, each posting OpenAI speech requests
(`response_format: pcm`, streamed) back to back for T seconds. Reports per phase:
requests and audio seconds per second, time to first audio byte p50/p95 (client
side), 200/503/other counts, and the server's RSS at the start, peak and end of
the phase (read from /proc). With one client, it also compares the client's time
to first byte with the server's own time to first audio (from /metrics): the
difference is what HTTP adds.

Expected: no errors while clients <= --max-streams + --max-queue (that many generating
together as rows of one batch, the rest queued), 503s with Retry-After above that, no
crash, RSS flat across phases.

    python benchmarks/load_serve.py                       # the tiny test pack
    python benchmarks/load_serve.py --full --precision int8   # english size, random weights
    python benchmarks/load_serve.py --model-dir PACK --voice-file VOICE --clients 1,4,8
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
TINY = ROOT / "tests" / "fixtures" / "tiny"
TEXTS = (
    "Hello world. This is a load test of the speech server.",
    "The quick brown fox jumps over the lazy dog.",
    "Every client asks for a different sentence, one after the other.",
    "Numbers such as 42 and dates like 2024-03-15 are read out as words.",
)
MAX_CLIENTS = 64
MAX_SECONDS = 120.0


@dataclass
class Phase:
    clients: int
    ttfb: list[float] = field(default_factory=list)
    total: list[float] = field(default_factory=list)
    statuses: dict[str, int] = field(default_factory=dict)
    audio_bytes: int = 0
    rss: list[int] = field(default_factory=list)

    def count(self, status: str) -> None:
        with _lock:
            self.statuses[status] = self.statuses.get(status, 0) + 1


_lock = threading.Lock()


def client_loop(url: str, phase: Phase, index: int, stop: float) -> None:
    n = 0
    with httpx.Client(timeout=60) as http:
        while time.monotonic() < stop:
            text = TEXTS[(index + n) % len(TEXTS)]
            n += 1
            body = {"model": "tts-1", "voice": "alloy", "input": text, "response_format": "pcm"}
            started = time.perf_counter()
            try:
                with http.stream("POST", f"{url}/v1/audio/speech", json=body) as r:
                    if r.status_code != 200:
                        r.read()
                        phase.count(str(r.status_code))
                        if r.status_code == 503:  # back off as told, briefly
                            time.sleep(min(float(r.headers.get("retry-after", 1)), 0.2))
                        continue
                    first = None
                    size = 0
                    for chunk in r.iter_raw():
                        if first is None and chunk:
                            first = time.perf_counter() - started
                        size += len(chunk)
                total = time.perf_counter() - started
            except httpx.HTTPError as exc:
                phase.count(type(exc).__name__)
                continue
            with _lock:
                phase.ttfb.append(first or total)
                phase.total.append(total)
                phase.audio_bytes += size
            phase.count("200")


def rss_bytes(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1)) * 1024


def server_means(url: str) -> dict[str, tuple[float, float]]:
    """(sum, count) of the server's time to first audio and time to first byte."""
    text = httpx.get(f"{url}/metrics", timeout=10).text
    out = {}
    for name in ("time_to_first_audio", "time_to_first_byte"):
        total = re.search(rf"pockettts_{name}_seconds_sum (\S+)", text)
        count = re.search(rf"pockettts_{name}_seconds_count (\S+)", text)
        out[name] = (float(total.group(1)), float(count.group(1)))
    return out


def run_phase(url: str, pid: int, clients: int, seconds: float) -> tuple[Phase, dict[str, float]]:
    phase = Phase(clients)
    before = server_means(url)
    stop = time.monotonic() + seconds
    threads = [
        threading.Thread(target=client_loop, args=(url, phase, i, stop)) for i in range(clients)
    ]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        phase.rss.append(rss_bytes(pid))
        time.sleep(0.25)
    for t in threads:
        t.join()
    after = server_means(url)
    means = {}
    for name, (total, count) in after.items():
        served = count - before[name][1]
        means[name] = (total - before[name][0]) / served if served else float("nan")
    return phase, means


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def build_full(precision: str) -> tuple[Path, Path]:
    """The english architecture with random weights (needs the test extra: torch)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from oracle.reference import (
        TOKENIZER_MODEL,
        build_reference,
        make_config,
        synthetic_voice_audio,
    )

    tmp = Path(tempfile.mkdtemp(prefix="pockettts-load-"))
    print("building the english architecture with random weights ...", flush=True)
    ref = build_reference(make_config("english", str(TOKENIZER_MODEL)), 7, tmp / "ref")
    ref.build_pack(tmp / "pack", precisions=("fp32", precision))
    voice = tmp / "voice.safetensors"
    ref.export_voice(ref.voice_state_from_audio(synthetic_voice_audio(seconds=3.0), 24_000), voice)
    return tmp / "pack", voice


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", default="1,5,12", help="client counts, one phase each")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each phase")
    parser.add_argument("--max-queue", type=int, default=4)
    parser.add_argument("--max-streams", type=int, default=4, help="requests spoken at once")
    parser.add_argument("--precision", default="fp32")
    parser.add_argument("--model-dir", type=Path)
    parser.add_argument("--voice-file", type=Path)
    parser.add_argument("--full", action="store_true", help="english size, random weights")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON")
    args = parser.parse_args()
    try:
        counts = [int(c) for c in args.clients.split(",")]
    except ValueError:
        counts = []
    if not counts or any(not 1 <= c <= MAX_CLIENTS for c in counts):
        parser.error(
            f"--clients: counts from 1 to {MAX_CLIENTS}, comma-separated, not {args.clients!r}"
        )
    if not 0 < args.seconds <= MAX_SECONDS:
        parser.error(f"--seconds: more than 0 and at most {MAX_SECONDS:g}, not {args.seconds:g}")
    if args.full:
        pack, voice = build_full(args.precision)
    else:
        pack, voice = args.model_dir or TINY / "pack", args.voice_file or TINY / "voice.safetensors"
    script = shutil.which("pockettts") or str(Path(sys.executable).with_name("pockettts"))
    command = [
        script, "serve", "--port", "0", "--model-dir", str(pack), "--voice-file", str(voice),
        "--precision", args.precision, "--max-queue", str(args.max_queue),
        "--max-streams", str(args.max_streams), "--log-level", "info",
    ]  # fmt: skip
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        assert proc.stderr is not None
        url = None
        while url is None:
            line = proc.stderr.readline()
            if not line:
                sys.exit(f"the server did not start (exit {proc.wait()})")
            entry = json.loads(line) if line.startswith(b"{") else {}
            if entry.get("event") == "listening":
                url = entry["url"]
        # The rest of the log is drained, so a full pipe can never block the server.
        threading.Thread(target=proc.stderr.read, daemon=True).start()
        while httpx.get(f"{url}/readyz", timeout=5).status_code != 200:
            time.sleep(0.1)
        run_phase(url, proc.pid, 1, min(2.0, args.seconds))  # warm-up
        report = []
        print(
            f"{'clients':>7} {'req/s':>6} {'audio s/s':>9} {'ttfb p50':>9} {'ttfb p95':>9} "
            f"{'200':>5} {'503':>5} {'other':>5} {'RSS start/peak/end MB':>22}"
        )
        for clients in counts:
            phase, means = run_phase(url, proc.pid, clients, args.seconds)
            ok = phase.statuses.get("200", 0)
            busy = phase.statuses.get("503", 0)
            other = sum(phase.statuses.values()) - ok - busy
            audio = phase.audio_bytes / 2 / 24_000
            mb = [round(r / 2**20) for r in (phase.rss[0], max(phase.rss), phase.rss[-1])]
            row = {
                "clients": clients,
                "requests_per_s": ok / args.seconds,
                "audio_seconds_per_s": audio / args.seconds,
                "ttfb_p50_ms": 1000 * percentile(phase.ttfb, 50),
                "ttfb_p95_ms": 1000 * percentile(phase.ttfb, 95),
                "ok": ok,
                "busy_503": busy,
                "other_errors": other,
                "statuses": phase.statuses,
                "rss_mb": mb,
                "server_ttfa_mean_ms": 1000 * means["time_to_first_audio"],
                "server_ttfb_mean_ms": 1000 * means["time_to_first_byte"],
                "client_ttfb_mean_ms": 1000 * statistics.fmean(phase.ttfb) if phase.ttfb else None,
            }
            report.append(row)
            print(
                f"{clients:>7} {row['requests_per_s']:>6.1f} {row['audio_seconds_per_s']:>9.2f} "
                f"{row['ttfb_p50_ms']:>7.0f}ms {row['ttfb_p95_ms']:>7.0f}ms "
                f"{ok:>5} {busy:>5} {other:>5} {'/'.join(map(str, mb)):>22}"
            )
        solo = next((r for r in report if r["clients"] == 1), None)
        if solo and solo["client_ttfb_mean_ms"] is not None:
            client, frame, sent = (
                solo[k]
                for k in ("client_ttfb_mean_ms", "server_ttfa_mean_ms", "server_ttfb_mean_ms")
            )
            print(
                f"one client, means: first audio byte at the client {client:.1f} ms after sending;"
                f" in the server, first audio frame {frame:.1f} ms and first bytes handed to the"
                f" socket {sent:.1f} ms after the request arrived"
            )
        alive = proc.poll() is None
        print(f"server still running: {alive}")
        if args.json:
            args.json.write_text(json.dumps({"phases": report, "alive": alive}, indent=2) + "\n")
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(30)


if __name__ == "__main__":
    main()
