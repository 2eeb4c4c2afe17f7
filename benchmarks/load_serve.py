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
import os
import re
import shutil
import socket
import statistics
import struct
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
MAX_REQUESTS = 50
START_SECONDS = 600.0  # a loaded machine may take minutes to import torch and load


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
    sys.path.insert(0, str(ROOT))
    from tests.support.reference import (
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


def start_pockettts(
    pack: Path, voice: Path, precision: str, max_streams: int, max_queue: int, *extra: str
) -> tuple[subprocess.Popen[bytes], str]:
    """`pockettts serve --port 0` (``extra``: more flags, such as ``--ray``) on 127.0.0.1 as a
    child, once /readyz answers 200."""
    script = shutil.which("pockettts") or str(Path(sys.executable).with_name("pockettts"))
    command = [
        script, "serve", "--host", "127.0.0.1", "--port", "0", "--model-dir", str(pack),
        "--voice-file", str(voice), "--precision", precision, "--max-queue", str(max_queue),
        "--max-streams", str(max_streams), "--log-level", "info", *extra,
    ]  # fmt: skip
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    url = None
    said: list[str] = []  # what the server printed before it died, to say why
    while url is None:
        line = proc.stderr.readline()
        if not line:
            why = said[-1] if said else "nothing on stderr"
            sys.exit(f"pockettts serve did not start (exit {proc.wait()}): {why}")
        said.append(line.decode(errors="replace").strip())
        entry = json.loads(line) if line.startswith(b"{") else {}
        if entry.get("event") == "listening":
            url = entry["url"]
    # The rest of the log is drained, so a full pipe can never block the server.
    threading.Thread(target=proc.stderr.read, daemon=True).start()
    wait_ready(proc, f"{url}/readyz", "pockettts serve")
    return proc, url


def wait_ready(proc: subprocess.Popen[bytes], url: str, name: str) -> None:
    """Until ``url`` answers 200; exits with one line if the server dies or takes 10 min."""
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"{name} exited with {proc.returncode} before it was ready")
        try:
            if httpx.get(url, timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    sys.exit(f"{name} was not ready within {START_SECONDS:g} s")


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(30)


# -- --compare-reference: pockettts serve against pocket-tts serve -------------------------
# The largest threshold a pack may state (config_bounds): no EOS logit of these random
# weights comes near it, so every request runs to its frame budget.
NO_EOS = 1e3


def eos_disabled_pack(pack: Path, out: Path) -> Path:
    """``pack`` seen through ``out``: its files linked, pack.json's EOS threshold at NO_EOS."""
    from pocketcli.packs.manifest import seal

    out.mkdir(parents=True, exist_ok=True)
    for file in pack.iterdir():
        if file.name not in ("pack.json", ".pockettts-verified.json"):
            (out / file.name).symlink_to(file.resolve())
    manifest = json.loads((pack / "pack.json").read_text(encoding="utf-8"))
    manifest["config"]["default_eos_threshold"] = NO_EOS
    # Sealed again, as the pack builder does: a manifest edited without it reads as damaged.
    (out / "pack.json").write_text(json.dumps(seal(manifest), indent=2), encoding="utf-8")
    return out


def eos_disabled_config(config: Path, weights: Path | None, pack: Path, out: Path) -> Path:
    """pocket-tts's config YAML with absolute paths, the pack's tokenizer, EOS at NO_EOS."""
    import yaml

    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    if weights is not None:
        data["weights_path"] = str(weights.resolve())
    if "weights_path" not in data:
        sys.exit(f"{config}: no weights_path, and no --reference-weights given")
    lookup = data["flow_lm"]["lookup_table"]
    tokenizer = json.loads((pack / "pack.json").read_text(encoding="utf-8"))["tokenizer"]["file"]
    lookup["tokenizer_path"] = str((pack / tokenizer).resolve())
    data["default_eos_threshold"] = NO_EOS
    out.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_reference(
    config: Path, voice: Path, quantize: bool, log: Path
) -> tuple[subprocess.Popen[bytes], str]:
    """`pocket-tts serve` (the installed package) on 127.0.0.1, once /health answers 200."""
    port = free_port()
    command = [
        sys.executable, "-m", "pocket_tts", "serve", "--host", "127.0.0.1", "--port", str(port),
        "--config", str(config), "--default-voice", str(voice),
    ]  # fmt: skip
    if quantize:
        command.append("--quantize")
    with log.open("wb") as sink:
        proc = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
    try:
        wait_ready(proc, f"http://127.0.0.1:{port}/health", "pocket-tts serve")
    except SystemExit:
        print(log.read_text(errors="replace")[-3000:], file=sys.stderr)
        raise
    return proc, f"http://127.0.0.1:{port}"


@dataclass
class Spoken:
    """One streamed POST /tts: seconds to the first audio sample and to the end, audio s."""

    first: float
    total: float
    audio: float


def speak_form(http: httpx.Client, url: str, text: str, seed: int | None = None) -> Spoken:
    """POST /tts (the form both servers share); the WAV header is parsed as it arrives."""
    form = {"text": text} if seed is None else {"text": text, "seed": str(seed)}
    started = time.perf_counter()
    head = b""
    data_at = rate = width = 0
    first = None
    size = 0
    with http.stream("POST", f"{url}/tts", data=form) as r:
        if r.status_code != 200:
            r.read()
            raise RuntimeError(f"HTTP {r.status_code}")
        for chunk in r.iter_raw():
            size += len(chunk)
            if not data_at:
                head += chunk
                found = head.find(b"data", 12)
                if found < 0 or len(head) < found + 8:
                    continue
                fmt = head.find(b"fmt ")
                rate, width = (struct.unpack_from("<I", head, fmt + 12)[0],
                               struct.unpack_from("<H", head, fmt + 20)[0])  # fmt: skip
                data_at = found + 8
            if first is None and size > data_at:
                first = time.perf_counter() - started
    total = time.perf_counter() - started
    if first is None or not rate:
        raise RuntimeError("no audio")
    return Spoken(first, total, (size - data_at) / width / rate)


@dataclass
class Compared:
    server: str
    clients: int
    spoken: list[Spoken] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)
    wall: float = 0.0
    rss_peak: int = 0
    load: float = 0.0

    def row(self) -> dict[str, object]:
        firsts = [s.first for s in self.spoken]
        audio = sum(s.audio for s in self.spoken)
        return {
            "server": self.server,
            "clients": self.clients,
            "requests": len(self.spoken),
            "errors": sum(self.errors.values()),
            "error_kinds": self.errors,
            "first_audio_p50_ms": 1000 * percentile(firsts, 50),
            "first_audio_p95_ms": 1000 * percentile(firsts, 95),
            "slowest_request_x_real_time": min(
                (s.audio / s.total for s in self.spoken), default=float("nan")
            ),
            "aggregate_rtfx": audio / self.wall if self.wall else float("nan"),
            "audio_seconds_per_request": audio / len(self.spoken) if self.spoken else 0.0,
            "rss_peak_mb": round(self.rss_peak / 2**20),
            "load_average_1m": self.load,
        }


def compared_phase(
    name: str, url: str, pid: int, clients: int, requests: int, timeout: float, seeded: bool = False
) -> Compared:
    """``clients`` threads, each speaking ``requests`` texts back to back (``seeded``: client
    i's n-th request has seed ``i * requests + n``, the same work on every server)."""
    phase = Compared(name, clients, load=os.getloadavg()[0])

    def client(index: int) -> None:
        with httpx.Client(timeout=timeout) as http:
            for n in range(requests):
                seed = index * requests + n if seeded else None
                try:
                    spoken = speak_form(http, url, TEXTS[(index + n) % len(TEXTS)], seed)
                except (httpx.HTTPError, RuntimeError) as exc:
                    kind = str(exc) if isinstance(exc, RuntimeError) else type(exc).__name__
                    with _lock:
                        phase.errors[kind] = phase.errors.get(kind, 0) + 1
                    continue
                with _lock:
                    phase.spoken.append(spoken)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        phase.rss_peak = max(phase.rss_peak, rss_bytes(pid))
        time.sleep(0.1)
    phase.wall = time.perf_counter() - started
    return phase


def compare_reference(args: argparse.Namespace, counts: list[int]) -> None:
    work = Path(tempfile.mkdtemp(prefix="pockettts-compare-"))
    if args.full:
        pack, voice = build_full(args.precision)
        config, weights = pack.parent / "ref" / "config.yaml", None
    else:
        pack = args.model_dir or TINY / "pack"
        voice = args.voice_file or TINY / "voice.safetensors"
        config = args.reference_config or TINY / "config.yaml"
        weights = args.reference_weights or (
            None if args.reference_config else TINY / "model.safetensors"
        )
    ours_pack = eos_disabled_pack(pack, work / "pack")
    theirs_config = eos_disabled_config(config, weights, pack, work / "config.yaml")
    streams = max(counts)
    print(f"load average at start: {' '.join(f'{v:.2f}' for v in os.getloadavg())}", flush=True)
    servers: dict[str, tuple[subprocess.Popen[bytes], str]] = {}
    try:
        servers["pockettts"] = start_pockettts(ours_pack, voice, args.precision, streams, streams)
        servers["pocket-tts"] = start_reference(
            theirs_config, voice, args.precision != "fp32", work / "pocket-tts.log"
        )
        for name, (proc, url) in servers.items():  # warm-up, not counted
            compared_phase(name, url, proc.pid, 1, 1, args.request_timeout)
        rows = []
        print(
            f"{'clients':>7} {'server':>10} {'first p50':>10} {'first p95':>10} "
            f"{'slowest x rt':>12} {'agg RTFx':>8} {'audio s/req':>11} {'errors':>6} "
            f"{'RSS MB':>6} {'load':>5}"
        )
        for i, clients in enumerate(counts):
            order = list(servers) if i % 2 == 0 else list(reversed(servers))
            for name in order:
                proc, url = servers[name]
                row = compared_phase(
                    name, url, proc.pid, clients, args.requests, args.request_timeout
                ).row()
                rows.append(row)
                slowest = row["slowest_request_x_real_time"]
                print(
                    f"{clients:>7} {name:>10} {row['first_audio_p50_ms']:>8.0f}ms "
                    f"{row['first_audio_p95_ms']:>8.0f}ms {slowest:>12.2f}"
                    f" {row['aggregate_rtfx']:>8.2f} {row['audio_seconds_per_request']:>11.2f}"
                    f" {row['errors']:>6} {row['rss_peak_mb']:>6} {row['load_average_1m']:>5.1f}",
                    flush=True,
                )
        alive = {name: proc.poll() is None for name, (proc, _) in servers.items()}
        print(f"servers still running: {alive}")
        if args.json:
            report = {"precision": args.precision, "eos_threshold": NO_EOS, "phases": rows}
            args.json.write_text(json.dumps({**report, "alive": alive}, indent=2) + "\n")
    finally:
        for proc, _ in servers.values():
            stop_server(proc)
        shutil.rmtree(work, ignore_errors=True)


# -- --compare-ray: pockettts serve against the same server on Ray Serve --------------------
RAY_IDLE_SECONDS = 5.0  # each server measured idle, for what it costs doing nothing


def process_tree() -> dict[int, tuple[int, float, str]]:
    """Every process now: pid -> (parent pid, CPU seconds with reaped children, command)."""
    ticks = os.sysconf("SC_CLK_TCK")
    table = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            raw = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # gone meanwhile
            continue
        fields = raw[raw.rindex(")") + 2 :].split()
        cpu = sum(int(f) for f in fields[11:15]) / ticks  # utime stime cutime cstime
        table[int(entry.name)] = (int(fields[1]), cpu, command)
    return table


def descendants(pid: int, table: dict[int, tuple[int, float, str]]) -> list[int]:
    """``pid`` and every process below it (a local Ray's GCS, raylet and workers too)."""
    children: dict[int, list[int]] = {}
    for child, (parent, _, _) in table.items():
        children.setdefault(parent, []).append(child)
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, []))
    return found


def tree_cpu(pid: int) -> float:
    """CPU seconds the server has used so far: its process and all below it (live ones with
    their reaped children's time)."""
    table = process_tree()
    return sum(table[p][1] for p in descendants(pid, table) if p in table)


def memory_kb(pid: int, field_name: str) -> int:
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0
    found = re.search(rf"^{field_name}:\s+(\d+) kB", text, re.MULTILINE)
    return int(found.group(1)) if found else 0


def server_memory(pid: int) -> dict[str, object]:
    """RSS of each process holding a model (the server, or each Ray Serve replica) and the
    proportional set size of the whole tree (shared pages counted once)."""
    table = process_tree()
    tree = descendants(pid, table)
    models = [p for p in tree if "ServeReplica" in table.get(p, (0, 0, ""))[2]] or [pid]
    return {
        "model_processes": len(models),
        "model_rss_mb": [round(memory_kb(p, "Rss") / 1024) for p in models],
        "tree_pss_mb": round(sum(memory_kb(p, "Pss") for p in tree) / 1024),
        "tree_processes": len(tree),
    }


def ray_phase_row(
    name: str, url: str, pid: int, clients: int, args: argparse.Namespace
) -> dict[str, object]:
    """One phase, with the server's CPU seconds per second of audio made."""
    before = tree_cpu(pid)
    phase = compared_phase(name, url, pid, clients, args.requests, args.request_timeout, True)
    cpu = tree_cpu(pid) - before
    row = phase.row()
    audio = sum(s.audio for s in phase.spoken)
    row["cpu_s_per_audio_s"] = cpu / audio if audio else float("nan")
    row["cpu_s"] = cpu
    return row


def compare_ray(args: argparse.Namespace, counts: list[int]) -> None:
    """`pockettts serve`, and `serve --ray` with one replica and with two (each a local Ray of
    its own), the same seeded requests, phases alternating."""
    pack, voice = args.model_dir or TINY / "pack", args.voice_file or TINY / "voice.safetensors"
    if args.full:
        sys.path.insert(0, str(ROOT / "benchmarks"))
        from random_pack import cached_random_pack

        pack, voice = cached_random_pack(args.work, args.precision)
    work = Path(tempfile.mkdtemp(prefix="pockettts-compare-ray-"))
    pack = eos_disabled_pack(pack, work / "pack")  # every request runs to its frame budget
    print(f"load average at start: {' '.join(f'{v:.2f}' for v in os.getloadavg())}", flush=True)
    flags = {"serve": (), "ray x1": ("--ray",), "ray x2": ("--ray", "--min-replicas", "2")}
    servers: dict[str, tuple[subprocess.Popen[bytes], str]] = {}
    try:
        for name, extra in flags.items():
            servers[name] = start_pockettts(
                pack, voice, args.precision, args.max_streams, args.max_queue, *extra
            )
        for name, (proc, url) in servers.items():  # warm-up (each replica), not counted
            compared_phase(name, url, proc.pid, 2, 1, args.request_timeout)
        idle = {}
        for name, (proc, _) in servers.items():
            before = tree_cpu(proc.pid)
            time.sleep(RAY_IDLE_SECONDS)
            idle[name] = (tree_cpu(proc.pid) - before) / RAY_IDLE_SECONDS
            print(f"{name:>7} idle: {idle[name]:.3f} CPU-s per s", flush=True)
        rows = ray_phases(servers, counts, args)
        memory = {name: server_memory(proc.pid) for name, (proc, _) in servers.items()}
        for name, figures in memory.items():
            print(f"{name:>7} memory: {figures}")
        alive = {name: proc.poll() is None for name, (proc, _) in servers.items()}
        print(f"servers still running: {alive}")
        if args.json:
            report = {"precision": args.precision, "phases": rows, "idle_cpu_per_s": idle}
            args.json.write_text(
                json.dumps({**report, "memory": memory, "alive": alive}, indent=2) + "\n"
            )
    finally:
        for proc, _ in servers.values():
            stop_server(proc)
        shutil.rmtree(work, ignore_errors=True)


def ray_phases(
    servers: dict[str, tuple[subprocess.Popen[bytes], str]],
    counts: list[int],
    args: argparse.Namespace,
) -> list[dict[str, object]]:
    print(
        f"{'clients':>7} {'server':>7} {'first p50':>10} {'first p95':>10} {'slowest x rt':>12}"
        f" {'agg RTFx':>8} {'CPU-s/audio-s':>13} {'errors':>6} {'load':>5}"
    )
    rows = []
    names = list(servers)
    for i, clients in enumerate(counts):
        for name in names[i % len(names) :] + names[: i % len(names)]:
            proc, url = servers[name]
            row = ray_phase_row(name, url, proc.pid, clients, args)
            rows.append(row)
            print(
                f"{clients:>7} {name:>7} {row['first_audio_p50_ms']:>8.0f}ms "
                f"{row['first_audio_p95_ms']:>8.0f}ms {row['slowest_request_x_real_time']:>12.2f}"
                f" {row['aggregate_rtfx']:>8.2f} {row['cpu_s_per_audio_s']:>13.3f}"
                f" {row['errors']:>6} {row['load_average_1m']:>5.1f}",
                flush=True,
            )
    return rows


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
    parser.add_argument(
        "--compare-reference",
        action="store_true",
        help="pockettts serve against pocket-tts serve, EOS off, phases alternating",
    )
    parser.add_argument(
        "--compare-ray",
        action="store_true",
        help="pockettts serve against serve --ray with one replica and with two, seeded requests,"
        " phases alternating; with --full, the pack cached in --work",
    )
    parser.add_argument(
        "--work", type=Path, default=Path(tempfile.gettempdir()) / "pockettts-bench", help="--full"
    )
    parser.add_argument("--requests", type=int, default=2, help="per client and phase (compare)")
    parser.add_argument("--request-timeout", type=float, default=120.0, help="seconds (compare)")
    parser.add_argument("--reference-config", type=Path, help="pocket-tts config YAML (compare)")
    parser.add_argument("--reference-weights", type=Path, help="its checkpoint (compare)")
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
    if not 1 <= args.requests <= MAX_REQUESTS:
        parser.error(f"--requests: from 1 to {MAX_REQUESTS}, not {args.requests}")
    if not 0 < args.request_timeout <= 600:
        parser.error(
            f"--request-timeout: more than 0 and at most 600, not {args.request_timeout:g}"
        )
    if args.compare_reference:
        compare_reference(args, counts)
        return
    if args.compare_ray:
        compare_ray(args, counts)
        return
    if args.full:
        pack, voice = build_full(args.precision)
    else:
        pack, voice = args.model_dir or TINY / "pack", args.voice_file or TINY / "voice.safetensors"
    proc, url = start_pockettts(pack, voice, args.precision, args.max_streams, args.max_queue)
    try:
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
        stop_server(proc)


if __name__ == "__main__":
    main()
