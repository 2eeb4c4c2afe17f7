"""A lone stream's first audio, part by part: this checkout against another, in one run.

A lone stream's first audio is one chain of work on the critical path: the request
reaching the scheduler and its chunk starting (text planned, KV cache and Mimi state
made), the text prefill with the first step, the flow head, the hand-off to the Mimi
thread, Mimi's first decode, and the frame reaching the reader. For each text, a fresh
process per side (after a warm-up stream) speaks it ``--streams`` times, one stream at
a time, each through the public API (``PocketTTS.stream``, read to its end), and
reports the median wall time of each part (the runtime's calls timestamped) and of the
whole. Wall clock: meaningful only beside the other side of the same run, on a quiet
machine; the load average is printed with every line.

    python benchmarks/bench_first_audio.py --compare /path/to/old/checkout \
        --model-dir P[,P_REF] --voice-file V

Parts: ``start`` (the call to the prefill's start), ``prefill`` (text prefill + first
step), ``head``, ``hand`` (head done to Mimi's start), ``mimi`` (the first decode),
``out`` (decoded to the reader holding the frame).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_cpu import TEXT, _sides  # noqa: E402

SHORT = "Hello there, how are you today?"
PARTS = ("start", "prefill", "head", "hand", "mimi", "out", "first")
# The runtime's calls on a lone stream's way to its first audio, by part.
CALLS = {
    "prefill_then_step": "prefill",
    "prefill_then_step_sampled": "prefill",
    "sample_latent": "head",
    "sample_latent_batch": "head",
    "decode": "mimi",
    "decode_batch": "mimi",
}


class Stamps:
    """The first start and end (``perf_counter``) of each part's outermost call."""

    def __init__(self) -> None:
        self.spans: dict[str, tuple[float, float]] = {}
        self._local = threading.local()

    def wrap(self, runtime) -> None:
        for method, part in CALLS.items():
            fn = getattr(runtime, method, None)
            if fn is not None:
                setattr(runtime, method, self._stamped(fn, part))

    def _stamped(self, fn, part: str):
        local, spans = self._local, self.spans

        def call(*args, **kwargs):
            if getattr(local, "inside", False):
                return fn(*args, **kwargs)
            local.inside, start = True, time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                local.inside = False
                spans.setdefault(part, (start, time.perf_counter()))

        return call


def _first_audio(tts, voice, text: str, stamps: Stamps, seed: int) -> dict[str, float]:
    """One lone stream's first frame: each part's milliseconds."""
    from pocketcli import SpeakOptions

    stamps.spans.clear()
    begin = time.perf_counter()
    frames = tts.stream(text, voice, SpeakOptions(seed=seed))
    next(frames)
    got = time.perf_counter()
    spans = dict(stamps.spans)
    for _ in frames:  # to its end, as a listener does: what it leaves the next one counts
        pass
    prefill, head, mimi = spans["prefill"], spans["head"], spans["mimi"]
    edges = {
        "start": (begin, prefill[0]),
        "prefill": prefill,
        "head": head,
        "hand": (head[1], mimi[0]),
        "mimi": mimi,
        "out": (mimi[1], got),
        "first": (begin, got),
    }
    return {part: 1000 * (b - a) for part, (a, b) in edges.items()}


def _idle(tts) -> None:
    """Waits until the scheduler has no stream left (a closed stream may still be
    finishing its tick), so the next stream runs alone."""
    scheduler = tts._scheduler
    deadline = time.monotonic() + 10
    while scheduler._rows and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(0.05)  # the Mimi thread's last job


def child(args) -> None:
    from pocketcli import PocketTTS

    tts = PocketTTS.open(runtime="onnx", model_dir=args.pack, precision=args.precision)
    stamps = Stamps()
    stamps.wrap(tts.runtime)
    voice = tts.voices.load(args.voice)
    list(tts.stream(args.text, voice))  # warm-up: sessions, allocator, scheduler thread
    runs = []
    for i in range(args.n):
        _idle(tts)
        runs.append(_first_audio(tts, voice, args.text, stamps, i))
    print(json.dumps({p: statistics.median(r[p] for r in runs) for p in PARTS}))


def measure(tree: Path, pack: Path, voice: Path, args, text: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree), POCKETTTS_NO_WARN="1")
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--pack", str(pack)]
    cmd += ["--voice", str(voice), "--n", str(args.streams), "--precision", args.precision]
    out = subprocess.run([*cmd, "--text", text], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{tree}: the child failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--streams", type=int, default=7, help="lone streams per process")
    parser.add_argument("--compare", metavar="REF", help="another checkout, run alternately")
    parser.add_argument("--precision", default="int8")
    parser.add_argument("--model-dir", help="pack (A,B: B for --compare's side)")
    parser.add_argument("--voice-file", help="with --model-dir")
    parser.add_argument("--work", default=str(Path(tempfile.gettempdir()) / "pockettts-bench"))
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--pack", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--voice", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--text", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    sides, voice = _sides(args)
    print(f"cores {os.cpu_count()}; medians of {args.streams} lone streams per line, ms")
    print(f"{'side':>4} {'text':>5}" + "".join(f" {p:>7}" for p in PARTS) + f" {'load':>5}")
    results: dict[tuple[str, str], list[dict]] = {}
    for rnd in range(args.rounds):
        for label, text in (("bench", TEXT), ("short", SHORT)):
            for name, tree, pack in sides if rnd % 2 == 0 else sides[::-1]:
                r = measure(tree, pack, voice, args, text)
                results.setdefault((name, label), []).append(r)
                cells = "".join(f" {r[p]:>7.1f}" for p in PARTS)
                print(f"{name:>4} {label:>5}{cells} {os.getloadavg()[0]:>5.1f}", flush=True)
    print("medians over the rounds:")
    for (name, label), runs in sorted(results.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        cells = "".join(f" {statistics.median(r[p] for r in runs):>7.1f}" for p in PARTS)
        print(f"{name:>4} {label:>5}{cells}")


if __name__ == "__main__":
    main()
