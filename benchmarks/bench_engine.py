"""Speed of our ONNX pack against Kyutai's pocket-tts, side by side in one run.

Full-size english architecture with random weights (the real weights cannot
be downloaded here), a 3 s cloned voice, one chunk of 100 frames (EOS fires
at frame 6 on random weights; frames_after_eos=94 makes exactly 100). Both
sides get the same raw text (ours with normalisation off). Each side runs in
its default threading: pocket-tts with torch's intra-op threads (printed),
pockettts with ``default_threads()`` intra-op threads per FlowLM and Mimi
session (2 on a machine with 2 or more cores; POCKETTTS_THREADS overrides),
one for the text lookup and the flow head, and the Mimi decoder overlapped
with the FlowLM. After one warm-up run each, the sides alternate run by run
(``--repeats`` rounds), so both see the same machine load. Prints the
threads and the machine's core count, then ms per frame, real-time factor
(RTFx = audio seconds / wall seconds), time to first audio (medians), and
ratios.

    pip install -e '.[test]'
    python benchmarks/bench_engine.py [--repeats 3] [--int8]

``--streams 1,2,4,8``: many streams of one model at once (the scheduler), no
pocket-tts side. For each count, that many streams of the same text (EOS off:
each runs its whole frame budget; seeds differ) are spoken together, and the
run prints aggregate RTFx (audio seconds of all streams / wall seconds), the
slowest stream's RTFx, first audio (the slowest stream's), and ms per tick
split into FlowLM (prefills and steps), flow head and Mimi (Mimi runs on its
own thread beside the FlowLM, so the parts can add up to more than the tick).
The tiny test pack by default (a quick check that it works); ``--full`` for
the full-size English architecture with random weights (built once into
``--work``), or ``--model-dir``/``--voice-file`` (``--model-dir A,B``: several packs,
e.g. before and after a builder change, run in turn for each count so they see the
same load; ``--rounds R`` repeats the whole sweep). ``--mimi-rows 1,auto,8`` runs
each count once per value: the most streams one Mimi call may decode (1: a call
per stream; auto: what the runtime chooses, ``OnnxRuntime.decode_rows``); the
``per call`` column is the streams a Mimi call decoded on average.

    python benchmarks/bench_engine.py --streams 1,2,4,8 --full --precision int8
    python benchmarks/bench_engine.py --streams 1,2,4,8 --full --mimi-rows 1,auto,8
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pocketcli import PocketTTS  # noqa: E402
from pocketcli.options import SpeakOptions  # noqa: E402
from tests.support.reference import (  # noqa: E402
    TOKENIZER_MODEL,
    build_reference,
    make_config,
    synthetic_voice_audio,
)

TEXT = "Hello world. I am Kyutai's Pocket TTS. I'm fast enough to run on small CPUs."
FRAMES = 100
FRAMES_AFTER_EOS = FRAMES - 6


def time_stream(stream) -> tuple[float, float, int]:
    """(time to first audio, total seconds, samples) for an iterator of audio chunks."""
    start = time.perf_counter()
    first = None
    samples = 0
    for chunk in stream:
        if first is None:
            first = time.perf_counter() - start
        samples += len(chunk)
    return first or 0.0, time.perf_counter() - start, samples


def measure(sides: dict, repeats: int, sample_rate: int) -> list[dict]:
    """One warm-up run per side, then ``repeats`` rounds in which the sides alternate."""
    for make_stream in sides.values():
        time_stream(make_stream())
    runs: dict[str, list] = {label: [] for label in sides}
    for _ in range(repeats):
        for label, make_stream in sides.items():
            runs[label].append(time_stream(make_stream()))
    results = []
    for label, measured in runs.items():
        ttfa = statistics.median(r[0] for r in measured)
        total = statistics.median(r[1] for r in measured)
        samples = measured[0][2]
        frames = samples // 1920
        result = {
            "label": label,
            "frames": frames,
            "ms_per_frame": 1000 * total / frames,
            "rtfx": samples / sample_rate / total,
            "ttfa_ms": 1000 * ttfa,
        }
        print(
            f"{label:28s} {frames:4d} frames  {result['ms_per_frame']:7.1f} ms/frame  "
            f"RTFx {result['rtfx']:5.2f}  first audio {result['ttfa_ms']:6.0f} ms",
            flush=True,
        )
        results.append(result)
    return results


class TimedRuntime:
    """The runtime with the seconds spent in each part counted (FlowLM, flow head, Mimi)."""

    PARTS = {
        "prefill_then_step": "flowlm",
        "step": "flowlm",
        "step_batch": "flowlm",
        "sample_latent": "flow head",
        "sample_latent_batch": "flow head",
        "decode": "mimi",
        "decode_batch": "mimi",
    }

    def __init__(self, runtime, mimi_rows: str = "auto") -> None:
        self._runtime = runtime
        self.config = runtime.config
        self.seconds = dict.fromkeys(self.PARTS.values(), 0.0)
        self.mimi_rows = mimi_rows
        self.mimi_calls = self.mimi_streams = 0

    @property
    def decode_batch_unavailable_reason(self) -> str | None:
        if self.mimi_rows == "1":
            return "one call per stream (--mimi-rows 1)"
        return getattr(self._runtime, "decode_batch_unavailable_reason", "none")

    def decode_rows(self, frames: int) -> int:
        if self.mimi_rows == "auto":
            return self._runtime.decode_rows(frames)
        return int(self.mimi_rows)

    def __getattr__(self, name: str):
        attr = getattr(self._runtime, name)
        part = self.PARTS.get(name)
        if part is None:
            return attr

        def timed(*args, **kwargs):
            if part == "mimi":
                self.mimi_calls += 1
                self.mimi_streams += len(args[0]) if name == "decode_batch" else 1
            start = time.perf_counter()
            try:
                return attr(*args, **kwargs)
            finally:
                self.seconds[part] += time.perf_counter() - start

        return timed


def streams_main(args) -> None:
    if args.model_dir is not None:
        packs = [Path(p) for p in args.model_dir.split(",")]
        voice_file = Path(args.voice_file)
    elif args.full:
        sys.path.insert(0, str(ROOT / "benchmarks"))
        from random_pack import cached_random_pack

        pack, voice_file = cached_random_pack(Path(args.work), args.precision)
        packs = [pack]
    else:
        packs = [ROOT / "tests" / "fixtures" / "tiny" / "pack"]
        voice_file = ROOT / "tests" / "fixtures" / "tiny" / "voice.safetensors"
    models = [
        PocketTTS.open(runtime="onnx", model_dir=pack, precision=args.precision) for pack in packs
    ]
    voices = [tts.voices.load(voice_file) for tts in models]
    mimi_rows = args.mimi_rows.split(",")
    load = os.getloadavg()
    for i, pack in enumerate(packs):
        print(f"pack {i}: {pack} ({args.precision})")
    print(
        f"cores {os.cpu_count()}, load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}",
        flush=True,
    )
    counts = [int(n) for n in args.streams.split(",")]
    print(
        f"{'pack':>4} {'streams':>7} {'agg RTFx':>9} {'slowest RTFx':>13} {'first audio':>12}"
        f" {'ms/tick':>8} {'FlowLM':>7} {'flow head':>10} {'Mimi':>6} {'rows/tick':>10}"
        f" {'Mimi rows':>9} {'per call':>8}"
    )
    runs = [(counts[0], mimi_rows[0])]  # the first run twice: it warms up
    runs += [(n, rows) for _ in range(args.rounds) for n in counts for rows in mimi_rows]
    for n, rows in runs:
        for i, (tts, voice) in enumerate(zip(models, voices, strict=True)):
            timed = TimedRuntime(tts.runtime, rows)
            r = run_streams(tts, timed, voice, n)
            print(
                f"{i:>4} {n:>7} {r['aggregate']:>9.2f} {r['slowest']:>13.2f}"
                f" {r['first_ms']:>10.0f}ms {r['tick_ms']:>8.1f}"
                f" {r['flowlm']:>7.1f} {r['flow head']:>10.1f}"
                f" {r['mimi']:>6.1f} {r['rows']:>10.1f}"
                f" {rows:>9} {timed.mimi_streams / max(timed.mimi_calls, 1):>8.1f}",
                flush=True,
            )
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


def run_streams(tts, timed: TimedRuntime, voice, n: int) -> dict:
    """``n`` streams of TEXT together on a fresh scheduler: figures of the run."""
    import threading

    from pocketcli.engine.scheduler import Scheduler
    from pocketcli.options import SpeakOptions

    scheduler = Scheduler(timed)
    timed.seconds = dict.fromkeys(timed.seconds, 0.0)
    firsts, ends, samples = [0.0] * n, [0.0] * n, [0] * n
    start = time.perf_counter()
    handles = []
    for i in range(n):
        o = SpeakOptions(seed=i, eos_threshold=1e9, normalize=False, output_chain=False)
        handles.append(
            scheduler.submit(
                tts._script_for(TEXT, o), voice, tts._noise_for(o), tts._settings_for(o)
            )
        )

    def read(i: int) -> None:
        for frame in handles[i]:
            if not samples[i]:
                firsts[i] = time.perf_counter() - start
            samples[i] += frame.audio.size
        ends[i] = time.perf_counter() - start

    readers = [threading.Thread(target=read, args=(i,)) for i in range(n)]
    for t in readers:
        t.start()
    for t in readers:
        t.join()
    wall = time.perf_counter() - start
    stats = scheduler.stats
    scheduler.close()
    rate = tts.sample_rate
    ticks = max(stats.ticks, 1)
    return {
        "aggregate": sum(samples) / rate / wall,
        "slowest": min(samples[i] / rate / ends[i] for i in range(n)),
        "first_ms": 1000 * max(firsts),
        "tick_ms": 1000 * wall / ticks,
        "rows": sum(k * v for k, v in stats.batch_sizes.items()) / ticks,
        **{k: 1000 * v / ticks for k, v in timed.seconds.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--int8", action="store_true", help="also our int8 pack")
    parser.add_argument("--streams", metavar="N,N,...", help="streams at once, e.g. 1,2,4,8")
    parser.add_argument("--precision", default="fp32", help="with --streams")
    parser.add_argument(
        "--mimi-rows", default="auto", help="with --streams: streams per Mimi call, e.g. 1,auto,8"
    )
    parser.add_argument("--full", action="store_true", help="with --streams: english size")
    parser.add_argument("--work", default=str(Path(tempfile.gettempdir()) / "pockettts-bench"))
    parser.add_argument("--model-dir", help="with --streams: this pack (A,B: each in turn)")
    parser.add_argument("--rounds", type=int, default=1, help="with --streams: sweeps")
    parser.add_argument("--voice-file", help="with --model-dir")
    args = parser.parse_args()
    if args.streams:
        streams_main(args)
        return

    import torch

    tmp = Path(tempfile.mkdtemp(prefix="pockettts-bench-"))
    print("building the english architecture with random weights ...", flush=True)
    ref = build_reference(make_config("english", str(TOKENIZER_MODEL)), 7, tmp / "ref")
    precisions = ("fp32", "int8") if args.int8 else ("fp32",)
    t0 = time.perf_counter()
    ref.build_pack(tmp / "pack", precisions=precisions)
    print(f"pack built in {time.perf_counter() - t0:.1f} s", flush=True)
    voice_state = ref.voice_state_from_audio(synthetic_voice_audio(seconds=3.0), 24_000)
    ref.export_voice(voice_state, tmp / "voice.safetensors")

    model = ref.model
    model.temp = 0.3
    from pocketcli.runtimes.onnx import default_threads

    print(
        f"cores {os.cpu_count()}, torch threads {torch.get_num_threads()},"
        f" pockettts threads per session {default_threads()}",
        flush=True,
    )

    def oracle_stream():
        torch.manual_seed(0)
        return (
            c.numpy()
            for c in model.generate_audio_stream(
                voice_state, TEXT, frames_after_eos=FRAMES_AFTER_EOS
            )
        )

    sides = {"pocket-tts 4.0.1 fp32": oracle_stream}
    for precision in precisions:
        ours = PocketTTS.open(runtime="onnx", model_dir=tmp / "pack", precision=precision)
        voice = ours.voices.load(tmp / "voice.safetensors")

        def our_stream(ours=ours, voice=voice):
            return (
                f.audio
                for f in ours.stream(
                    TEXT,
                    voice,
                    options=SpeakOptions(
                        seed=0, frames_after_eos=FRAMES_AFTER_EOS, normalize=False
                    ),
                )
            )

        sides[f"pockettts onnx {precision}"] = our_stream
    results = measure(sides, args.repeats, 24_000)

    base = results[0]
    print()
    for r in results[1:]:
        print(
            f"{r['label']} vs {base['label']}: RTFx x{r['rtfx'] / base['rtfx']:.2f}, "
            f"first audio x{base['ttfa_ms'] / r['ttfa_ms']:.2f} faster"
        )
    assert all(r["frames"] == FRAMES for r in results), [r["frames"] for r in results]


if __name__ == "__main__":
    main()
