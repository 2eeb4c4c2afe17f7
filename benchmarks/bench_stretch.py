"""Which time-stretcher speaks faster or slower without changing the voice (issue 36).

For each candidate, on real speech (the clips of ``/work/shared/data/speech``, or
``--clips DIR``; the test fixtures in ``tests/fixtures/speech`` otherwise), at 0.5x,
0.8x, 1.3x and 2x: the duration ratio's error against 1/speed, the median F0's shift
(YIN from ``tests/support/speech_measures.py``; librosa's pyin beside it when librosa
imports; both with octave errors folded away, see ``f0_shift``), the spectral centroid's
shift, CPU-ms per 80 ms frame of input, and whether it stretches frame by frame with
state (and the latency that adds). Candidates that do not import are listed as missing.
Then the engine's CPU-ms per model frame through the library at 1.0 (no stretcher) and
at each speed on ``--model-dir`` (the tiny pack unless a full-size one is given), so the
stretcher's cost per frame is seen beside the engine's in one run.

    python benchmarks/bench_stretch.py [--clips DIR] [--no-pyin] [--model-dir PACK]
    python benchmarks/bench_stretch.py --engine-only --model-dir PACK
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import soundfile as sf

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pocketcli.audio.resample import resample_poly  # noqa: E402
from tests.support.speech_measures import (  # noqa: E402
    f0_shift,
    folded_shift,
    relative_shift,
    spectral_centroid,
)

RATE = 24_000  # Pocket TTS's rate: every clip is resampled to it
FRAME = 1920  # 80 ms at 24 kHz
SPEEDS = (0.5, 0.8, 1.3, 2.0)
SHARED = Path("/work/shared/data/speech")
FIXTURES = ROOT / "tests" / "fixtures" / "speech"

Stretch = Callable[[np.ndarray, float], np.ndarray]


def load_clips(folder: Path) -> dict[str, np.ndarray]:
    clips = {}
    for path in sorted(folder.rglob("*.wav")):
        audio, rate = sf.read(path, dtype="float32", always_2d=True)
        mono = audio.mean(axis=1)
        if rate != RATE:
            mono = resample_poly(mono, RATE, rate)
        clips[path.stem[-24:]] = mono.astype(np.float32)
    return clips


def candidates() -> dict[str, tuple[Stretch | None, str]]:
    """name -> (stretch(audio, speed) or None when missing, streaming note)."""
    out: dict[str, tuple[Stretch | None, str]] = {}
    try:
        from pocketcli.audio.stretch import Stretcher

        def ours(size: int) -> Stretch:
            def run(x: np.ndarray, speed: float) -> np.ndarray:
                s = Stretcher(speed, size, size // 2)
                parts = [s.process(x[i : i + FRAME]) for i in range(0, len(x), FRAME)]
                return np.concatenate([*parts, s.flush()])

            return run

        for size in (512, 1024):
            name = f"pockettts Stretcher (audiotsm wsola {size}, by frame)"
            out[name] = (ours(size), f"yes, per stream, {first_audio(Stretcher, size)}")
    except ImportError:
        out["pockettts Stretcher"] = (None, "")
    try:
        import audiotsm
        from audiotsm.io.array import ArrayReader, ArrayWriter

        def tsm(kind: str) -> Stretch:
            def run(x: np.ndarray, speed: float) -> np.ndarray:
                writer = ArrayWriter(1)
                getattr(audiotsm, kind)(1, speed=speed).run(ArrayReader(x[None, :]), writer)
                return writer.data[0].astype(np.float32)

            return run

        out["audiotsm wsola"] = (tsm("wsola"), "yes (read_from/write_to); 1024+512 samples")
        out["audiotsm phasevocoder"] = (tsm("phasevocoder"), "yes (read_from/write_to)")
    except ImportError:
        out["audiotsm wsola"] = (None, "")
    try:
        import pedalboard

        def rubberband(x: np.ndarray, speed: float) -> np.ndarray:
            return pedalboard.time_stretch(x[None, :], RATE, speed)[0]

        out["pedalboard (Rubber Band)"] = (rubberband, "no: whole buffers only")
    except ImportError:
        out["pedalboard (Rubber Band)"] = (None, "")
    try:
        import pytsmod

        out["pytsmod wsola"] = (
            lambda x, s: pytsmod.wsola(x.astype(np.float64), 1.0 / s).astype(np.float32),
            "no: whole signals only",
        )
        out["pytsmod hptsm"] = (
            lambda x, s: pytsmod.hptsm(x.astype(np.float64), 1.0 / s).astype(np.float32),
            "no: whole signals only",
        )
    except ImportError:
        out["pytsmod wsola"] = (None, "")
    return out


def first_audio(stretcher: Callable, size: int) -> str:
    """When each speed's first stretched samples come, in 80 ms frames of input."""
    x = np.random.default_rng(0).standard_normal(FRAME * 8).astype(np.float32)
    firsts = []
    for speed in (0.25, *SPEEDS, 4.0):
        s = stretcher(speed, size, size // 2)
        outs = [len(s.process(x[i : i + FRAME])) for i in range(0, len(x), FRAME)]
        firsts.append(f"{speed:g}x: +{next(i for i, n in enumerate(outs) if n)}")
    return "first audio after frame (0 = as at 1.0) " + ", ".join(firsts)


def pyin_f0() -> Callable[[np.ndarray, np.ndarray], float] | None:
    try:
        import librosa
    except ImportError:
        return None

    def f0(before: np.ndarray, after: np.ndarray) -> float:
        track = [
            librosa.pyin(x, fmin=60, fmax=400, sr=RATE, frame_length=1024)[0]
            for x in (before, after)
        ]  # noqa: E501
        return folded_shift(*track)

    return f0


def measure(
    stretch: Stretch, clips: dict[str, np.ndarray], speed: float, pyin: Callable | None
) -> dict[str, float]:
    """Duration error (worst clip), F0 and centroid shifts of all clips pooled, CPU-ms."""
    dur = []
    outs = []
    cpu = 0.0
    frames = 0
    for x in clips.values():
        t0 = time.process_time()
        y = stretch(x, speed)
        cpu += time.process_time() - t0
        frames += len(x) / FRAME
        dur.append(abs(len(y) / len(x) * speed - 1.0))
        outs.append(y)
    before = np.concatenate(list(clips.values()))
    after = np.concatenate(outs)
    return {
        "dur": max(dur),
        "f0": f0_shift(before, after, RATE),
        "f0p": pyin(before, after) if pyin else float("nan"),
        "cen": relative_shift(spectral_centroid(before, RATE), spectral_centroid(after, RATE)),
        "ms": 1000 * cpu / frames,
    }


def engine_ms_per_frame(
    model_dir: Path, speeds: tuple[float, ...], precision: str | None = None
) -> dict[float, float]:
    """CPU-ms per 80 ms frame the model makes (process time, all threads), through the
    library at each speed on ``model_dir``: the stretcher's cost beside the engine's, the
    speeds alternating over three rounds (median). 1.0 runs no stretcher."""
    from pocketcli.api import PocketTTS
    from pocketcli.options import SpeakOptions

    tts = PocketTTS.open(model_dir=model_dir, **({"precision": precision} if precision else {}))
    text = "The quick brown fox jumps over the lazy dog, and then it runs far away."
    tts.synthesize(text, options=SpeakOptions(seed=1))  # warm
    runs: dict[float, list[float]] = {speed: [] for speed in speeds}
    for _ in range(3):
        for speed in speeds:
            opts = SpeakOptions(seed=1, output_chain=False, speed=speed)
            t0 = time.process_time()
            audio = tts.synthesize(text, options=opts)
            frames = len(audio) * speed / FRAME  # the model's frames (audio is over speed)
            runs[speed].append(1000 * (time.process_time() - t0) / frames)
    return {speed: statistics.median(values) for speed, values in runs.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clips", type=Path, default=SHARED if SHARED.is_dir() else FIXTURES)
    ap.add_argument("--no-pyin", action="store_true", help="skip librosa's pyin")
    ap.add_argument(
        "--model-dir",
        type=Path,
        default=ROOT / "tests/fixtures/tiny/pack",
        help="pack for the engine's figures (default: the tiny test pack; give a full-size one)",
    )
    ap.add_argument("--precision", help="of --model-dir's graphs (default: the pack's)")
    ap.add_argument("--engine-only", action="store_true", help="only the engine's figures")
    args = ap.parse_args()
    if args.engine_only:
        return print_engine(args.model_dir, args.precision)
    clips = load_clips(args.clips)
    pyin = None if args.no_pyin else pyin_f0()
    print(f"{len(clips)} clips from {args.clips}, {sum(map(len, clips.values())) / RATE:.1f} s")
    print(
        "dur = worst clip's |len ratio * speed - 1|; f0 (YIN), f0p (pyin), cen (centroid):"
        " shifts over all clips pooled; ms/fr = CPU-ms per 80 ms frame of input"
    )
    head = (
        f"{'candidate':48} {'speed':>5} {'dur%':>6} {'f0%':>6} {'f0p%':>6} {'cen%':>6} {'ms/fr':>7}"
    )
    print(head)
    for name, (stretch, note) in candidates().items():
        if stretch is None:
            print(f"{name:48} missing (not installed)")
            continue
        for speed in SPEEDS:
            m = measure(stretch, clips, speed, pyin)
            print(
                f"{name:48} {speed:5.1f} {100 * m['dur']:6.2f} {100 * m['f0']:6.2f} "
                f"{100 * m['f0p']:6.2f} {100 * m['cen']:6.2f} {m['ms']:7.3f}"
            )
        print(f"{'':48} streaming: {note}")
    print_engine(args.model_dir, args.precision)


def print_engine(model_dir: Path, precision: str | None) -> None:
    figures = engine_ms_per_frame(model_dir, (1.0, *SPEEDS), precision)
    print(f"engine on {model_dir} (load {os.getloadavg()[0]:.1f}), CPU-ms per model frame:")
    for speed, ms in figures.items():
        extra = ms - figures[1.0]
        print(f"  speed {speed:4.1f}: {ms:6.2f}  (stretcher {extra:+.2f})")


if __name__ == "__main__":
    main()
