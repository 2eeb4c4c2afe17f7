"""Processor time per stream-frame: this checkout against another, side by side in one run.

Wall-clock speed on a shared 2-core machine says more about the neighbours than about
the code; the processor time a frame costs does not. For each count of streams, that
many streams of one text (EOS off: each runs its whole frame budget; seeds differ) are
spoken together through the public API (``PocketTTS.stream`` from one thread per
stream: one scheduler), in a fresh process per measurement, and the child reports:

- CPU-ms per stream-frame: the process's user + system time (all threads:
  ``resource.getrusage``) over the frames made, warm-up excluded;
- the split of that time by part: ``flowlm`` (the FlowLM calls: text prefills and
  steps, with their Python around the graph such as the KV writes), ``head`` (the flow
  head calls), ``mimi`` (the Mimi decoder calls), each the processor time of the
  thread making the call while inside it plus the time of ONNX Runtime's pool threads
  of that part's sessions; ``engine`` is the rest (the scheduler's own Python, the
  hand-offs between threads, the readers);
- the split of that time by thread: ``sched`` is the scheduler thread (the engine's
  Python and the FlowLM calls it makes), ``mimi`` the Mimi thread, ``ort`` ONNX
  Runtime's pool threads (both sessions' second threads), ``other`` the rest (readers;
  before the one engine, a lone stream's FlowLM ran on its reader's thread);
- the slowest stream's real-time factor, first audio (the slowest stream's in the
  table; p50 and p95 over every stream of every round in the summary: wall clock,
  meaningful only against the other side of the same run), and the child's peak RSS.

``--busy N`` runs N CPU-bound neighbour processes (``python -c "while 1: pass"``)
for the whole run, as the issue's "one busy neighbour" measurements do.

``--compare REF`` runs REF's code (a checkout of pockettts: its ``pocketcli`` is imported
through PYTHONPATH) in the same run: for each count and round the two sides run one
after the other, their order alternating, so both see the same load. Prints the load
average with every line. Each side may get its own pack (``--model-dir A[,B]``: B for
REF, e.g. one built by REF's builder); by default both use the full-size English
architecture with random weights built by ``random_pack.py`` into ``--work``.

    python benchmarks/bench_cpu.py --streams 1,4,8,16 --rounds 2 --compare /path/to/old/checkout

``--capacities 128,192,256``: instead, the batched FlowLM step alone (this checkout's
runtime, in this process) at 1 and 8 rows with caches of those capacities, positions
at 120, CPU-ms per step, capacities alternating: what a row's unused cache positions
cost (a plain step, of packs built before issue 34's fused step, reads the whole capacity
of every row; a fused one reads each row's filled positions, so its figures stay flat).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEXT = (
    "The quick brown fox jumps over the lazy dog, and then it runs far away into the"
    " quiet green hills beyond the old stone bridge."
)


def _thread_times() -> dict[int, float]:
    """CPU seconds of each of this process's threads by native id (Linux /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    times: dict[int, float] = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            stat = (task / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        times[int(task.name)] = (int(fields[11]) + int(fields[12])) / tick
    return times


def _split(before: dict[int, float], after: dict[int, float], cpu: float) -> dict[str, float]:
    """The CPU seconds between two ``_thread_times`` by part: the scheduler and Mimi
    threads by their Python names, threads Python does not know are ONNX Runtime's."""
    python = {t.native_id: t.name for t in threading.enumerate()}
    parts = dict.fromkeys(("sched", "mimi", "ort"), 0.0)
    for tid, seconds in after.items():
        name = python.get(tid)
        if name is None:
            parts["ort"] += seconds - before.get(tid, 0.0)
        elif "sched" in name or "mimi" in name:
            parts["sched" if "sched" in name else "mimi"] += seconds - before.get(tid, 0.0)
    parts["other"] = max(0.0, cpu - sum(parts.values()))
    return parts


# Which part each runtime call is (the outermost call on a thread counts: ``step``
# may call ``step_batch``); the names of every checkout since the one engine and before.
CALL_PARTS = {
    "prefill": "flowlm",
    "prefill_then_step": "flowlm",
    "step": "flowlm",
    "step_batch": "flowlm",
    "sample_latent": "head",
    "sample_latent_batch": "head",
    "decode": "mimi",
    "decode_batch": "mimi",
}
PARTS = ("flowlm", "head", "mimi")


class PartTimer:
    """Processor time per part (``CALL_PARTS``): each call's own thread while inside it,
    and the pool threads ONNX Runtime made for that part's sessions."""

    def __init__(self) -> None:
        self._local = threading.local()
        self._totals: list[dict[str, float]] = []  # one per calling thread
        self.pool_threads: dict[int, str] = {}  # native id -> part

    def watch_sessions(self) -> None:
        """Notes the threads each new InferenceSession starts (its intra-op pool)."""
        import onnxruntime as ort

        init = ort.InferenceSession.__init__
        owners = self.pool_threads

        def patched(session, path_or_bytes, *args, **kwargs) -> None:
            before = set(os.listdir("/proc/self/task"))
            init(session, path_or_bytes, *args, **kwargs)
            name = Path(str(path_or_bytes)).name
            part = "mimi" if "mimi" in name else "head" if "head" in name else "flowlm"
            for tid in set(os.listdir("/proc/self/task")) - before:
                owners[int(tid)] = part

        ort.InferenceSession.__init__ = patched

    def wrap(self, runtime) -> None:
        for method, part in CALL_PARTS.items():
            fn = getattr(runtime, method, None)
            if fn is not None:
                setattr(runtime, method, self._timed(fn, part))

    def _timed(self, fn, part: str):
        local = self._local

        def call(*args, **kwargs):
            if getattr(local, "inside", False):
                return fn(*args, **kwargs)
            if not hasattr(local, "totals"):
                local.totals = dict.fromkeys(PARTS, 0.0)
                self._totals.append(local.totals)
            local.inside, start = True, time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                local.totals[part] += time.thread_time() - start
                local.inside = False

        return call

    def calls(self) -> dict[str, float]:
        """The calling threads' seconds per part so far."""
        return {p: sum(t[p] for t in list(self._totals)) for p in PARTS}

    def parts(self, before: tuple, after: tuple, cpu: float) -> dict[str, float]:
        """Seconds per part between two ``(calls(), _thread_times())`` snapshots, and
        ``engine``: the rest of ``cpu``."""
        parts = {p: after[0][p] - before[0][p] for p in PARTS}
        for tid, seconds in after[1].items():
            part = self.pool_threads.get(tid)
            if part is not None:
                parts[part] += seconds - before[1].get(tid, 0.0)
        parts["engine"] = cpu - sum(parts.values())
        return parts


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _speak(tts, voice, n: int, seed0: int) -> dict:
    """``n`` streams of TEXT at once; their frames, first audio and slowest RTFx."""
    from pocketcli.options import SpeakOptions

    rate, per_frame = tts.sample_rate, tts.runtime.config.mimi.samples_per_frame
    firsts, ends, samples = [0.0] * n, [0.0] * n, [0] * n
    start = time.perf_counter()

    def read(i: int) -> None:
        opts = SpeakOptions(seed=seed0 + i, eos_threshold=1e9, normalize=False, output_chain=False)
        for frame in tts.stream(TEXT, voice, opts):
            if not samples[i]:
                firsts[i] = time.perf_counter() - start
            samples[i] += frame.audio.size
        ends[i] = time.perf_counter() - start

    readers = [threading.Thread(target=read, args=(i,)) for i in range(n)]
    for t in readers:
        t.start()
    for t in readers:
        t.join()
    return {
        "frames": sum(samples) / per_frame,
        "first_ms": 1000 * max(firsts),
        "firsts_ms": [1000 * f for f in firsts],
        "slowest": min(samples[i] / rate / ends[i] for i in range(n)),
    }


def child(args) -> None:
    """One measurement in this process (the side's code is first on sys.path)."""
    from pocketcli import PocketTTS

    timer = PartTimer()
    timer.watch_sessions()
    tts = PocketTTS.open(runtime="onnx", model_dir=args.pack, precision=args.precision)
    timer.wrap(tts.runtime)
    # Checkouts before the small public class (issue 31) load voices on the model itself.
    voices = getattr(tts, "voices", None)
    voice = voices.load(args.voice) if voices is not None else tts.load_voice(args.voice)
    _speak(tts, voice, args.n, 1000)  # warm-up: sessions, allocator, scheduler thread
    before, threads_before, calls_before = _cpu(), _thread_times(), timer.calls()
    r = _speak(tts, voice, args.n, 0)
    cpu = _cpu() - before
    threads_after = _thread_times()
    parts = _split(threads_before, threads_after, cpu)
    calls = timer.parts((calls_before, threads_before), (timer.calls(), threads_after), cpu)
    frames = max(r["frames"], 1)
    r["cpu_ms"] = 1000 * cpu / frames
    r["parts"] = {k: 1000 * v / frames for k, v in parts.items()}
    r["calls"] = {k: 1000 * v / frames for k, v in calls.items()}
    r["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(r))


def measure(tree: Path, pack: Path, voice: Path, n: int, precision: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree), POCKETTTS_NO_WARN="1")
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--pack", str(pack)]
    cmd += ["--voice", str(voice), "--n", str(n), "--precision", precision]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{tree}: the child failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _step_once(runtime, step, feeds: dict, keys: list, values: list) -> None:
    names = [n for n in runtime._batch_outputs if n != "head_scores"]
    if runtime._fused:
        runtime._run_in_place(step, feeds, keys, values, names)
        return
    caches = {f"key_cache_{i}": k for i, k in enumerate(keys)}
    caches.update({f"value_cache_{i}": v for i, v in enumerate(values)})
    step.run(names, {**feeds, **caches})


def step_capacities(args, pack: Path) -> None:
    """CPU-ms per batched FlowLM step at each capacity (see the module docstring)."""
    import numpy as np

    from pocketcli.runtimes.onnx import OnnxRuntime

    runtime = OnnxRuntime(pack, args.precision)
    step = runtime._sessions["flowlm_step_batch"]
    t = runtime.config.flow_lm.transformer
    heads, dim = t.kv_heads, t.head_dim
    rng = np.random.default_rng(0)
    capacities = [int(c) for c in args.capacities.split(",")]
    for rows in (1, 8):
        cases = {}
        for c in capacities:
            latent_dim = runtime.config.flow_lm.latent_dim
            feeds = {
                "latents": rng.standard_normal((rows, 1, latent_dim)).astype(np.float32),
                "positions": np.full(rows, 120, np.int64),
            }
            if any(i.name == "embeddings" for i in step.get_inputs()):
                feeds["embeddings"] = np.zeros((rows, 0, t.d_model), np.float32)
            # A fused step (issue 34) reads keys [rows, heads, c, dim], bound in place.
            key_shape = (rows, heads, c, dim) if runtime._fused else (rows, heads, dim, c)
            keys = [rng.random(key_shape, np.float32) for _ in range(t.num_layers)]
            values = [rng.random((rows, heads, c, dim), np.float32) for _ in range(t.num_layers)]
            cases[c] = (feeds, keys, values)
        spent: dict[int, list[float]] = {c: [] for c in capacities}
        for rnd in range(2 * args.rounds + 2):
            for c in capacities if rnd % 2 == 0 else capacities[::-1]:
                before = _cpu()
                for _ in range(10):
                    _step_once(runtime, step, *cases[c])
                spent[c].append(100 * (_cpu() - before))
        medians = ", ".join(f"{c}: {statistics.median(v):.2f}" for c, v in spent.items())
        print(f"{rows} rows, CPU-ms per step by capacity: {medians}; load {os.getloadavg()[0]:.1f}")


def _sides(args) -> tuple[list[tuple[str, Path, Path]], Path]:
    """(name, code checkout, pack) per side, and the voice file."""
    if args.model_dir:
        packs = [Path(p) for p in args.model_dir.split(",")]
        voice = Path(args.voice_file)
    else:
        sys.path.insert(0, str(ROOT / "benchmarks"))
        from random_pack import cached_random_pack

        pack, voice = cached_random_pack(Path(args.work), args.precision)
        packs = [pack]
    sides = [("new", ROOT, packs[0])]
    if args.compare:
        sides.append(("ref", Path(args.compare).resolve(), packs[-1]))
    return sides, voice


def _line(name: str, n: int, r: dict) -> str:
    p, c = r["parts"], r["calls"]
    return (
        f"{name:>4} {n:>7} {r['cpu_ms']:>12.2f}"
        + "".join(f" {c[k]:>6.2f}" for k in (*PARTS, "engine"))
        + "".join(f" {p[k]:>6.2f}" for k in ("sched", "mimi", "ort", "other"))
        + f" {r['slowest']:>8.2f} {r['first_ms']:>5.0f}ms {r['rss_mb']:>7.0f}"
        + f" {os.getloadavg()[0]:>5.1f}"
    )


HEADER = (
    f"{'side':>4} {'streams':>7} {'CPU-ms/frame':>12}"
    + "".join(f" {k:>6}" for k in (*PARTS, "engine"))
    + "".join(f" {k:>6}" for k in ("sched", "mimi", "ort", "other"))
    + f" {'slowest':>8} {'first':>7} {'RSS MB':>7} {'load':>5}"
)


def _percentile(values: list[float], q: float) -> float:
    """The nearest-rank percentile ``q`` (0-100) of ``values``."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, -(-len(ordered) * q // 100) - 1))]


def _summary(counts: list[int], results: dict[tuple[str, int], list[dict]]) -> None:
    print("medians, CPU-ms per stream-frame (by part: flowlm/head/mimi/engine);")
    print("first audio over every stream of every round, p50/p95:")
    for n in counts:
        for name in ("new", "ref"):
            runs = results.get((name, n))
            if not runs:
                continue
            cpu = statistics.median(r["cpu_ms"] for r in runs)
            parts = "/".join(
                f"{statistics.median(r['calls'][k] for r in runs):.2f}" for k in (*PARTS, "engine")
            )
            firsts = [f for r in runs for f in r["firsts_ms"]]
            line = (
                f"  {n:>2} streams {name}: {cpu:.2f} ({parts}), first audio"
                f" {_percentile(firsts, 50):.0f}/{_percentile(firsts, 95):.0f} ms,"
                f" slowest RTFx {statistics.median(r['slowest'] for r in runs):.2f}"
            )
            if name == "ref" and ("new", n) in results:
                new = statistics.median(r["cpu_ms"] for r in results[("new", n)])
                line += f" (new/ref {new / cpu:.3f})"
            print(line)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--streams", default="1,4,8,16", metavar="N,N,...")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--compare", metavar="REF", help="another checkout, run alternately")
    parser.add_argument("--precision", default="int8")
    parser.add_argument("--model-dir", help="pack (A,B: B for --compare's side)")
    parser.add_argument("--voice-file", help="with --model-dir")
    parser.add_argument("--work", default=str(Path(tempfile.gettempdir()) / "pockettts-bench"))
    parser.add_argument("--busy", type=int, default=0, help="CPU-bound neighbours to run")
    parser.add_argument("--capacities", metavar="C,C,...", help="the FlowLM step alone")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--pack", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--voice", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    sides, voice = _sides(args)
    if args.capacities:
        step_capacities(args, sides[0][2])
        return
    for name, tree, pack in sides:
        print(f"{name}: code {tree}, pack {pack} ({args.precision})")
    busy = [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(args.busy)]
    try:
        _run(args, sides, voice)
    finally:
        for proc in busy:
            proc.kill()
            proc.wait()


def _run(args, sides: list[tuple[str, Path, Path]], voice: Path) -> None:
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"cores {os.cpu_count()}, load average {load}, {args.busy} busy neighbours;"
        " CPU-ms per stream-frame, all threads"
    )
    print(HEADER)
    counts = [int(s) for s in args.streams.split(",")]
    results: dict[tuple[str, int], list[dict]] = {}
    for rnd in range(args.rounds):
        for n in counts:
            for name, tree, pack in sides if (rnd + n) % 2 == 0 else sides[::-1]:
                r = measure(tree, pack, voice, n, args.precision)
                results.setdefault((name, n), []).append(r)
                print(_line(name, n, r), flush=True)
    _summary(counts, results)
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
