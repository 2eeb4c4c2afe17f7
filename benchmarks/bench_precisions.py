"""fp32, int8 and int4 of one pack side by side: speed and deviation from fp32.

Streams the same text with the same voice at temperature 0 (so the only
difference is the weights' precision), EOS disabled so every precision makes
the same frames. Prints the threads per session and the machine's cores,
then ms per frame, RTFx, time to first audio, and the audio's max |diff| and
signal-to-error ratio against fp32.

    python benchmarks/bench_precisions.py --model-dir PACK --voice-file VOICE
    (build a pack with precisions=("fp32", "int8", "int4"), e.g. via bench_engine.py)
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import numpy as np

from pocketcli import PocketTTS
from pocketcli.options import SpeakOptions

TEXT = "Hello world. I am Kyutai's Pocket TTS. I'm fast enough to run on small CPUs."


def run(tts: PocketTTS, voice, repeats: int) -> tuple[np.ndarray, float, float]:
    best = []
    audio = np.zeros(0, np.float32)
    for _ in range(repeats + 1):  # the first run warms up
        start = time.perf_counter()
        first = None
        frames = []
        for frame in tts.stream(
            TEXT, voice, options=SpeakOptions(temperature=0.0, eos_threshold=1e9, normalize=False)
        ):
            if first is None:
                first = time.perf_counter() - start
            frames.append(frame.audio)
        best.append((time.perf_counter() - start, first or 0.0))
        audio = np.concatenate(frames)
    total = statistics.median(b[0] for b in best[1:])
    ttfa = statistics.median(b[1] for b in best[1:])
    return audio, total, ttfa


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model-dir", type=Path, required=True)
    parser.add_argument("--voice-file", type=Path)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    from pocketcli.runtimes.onnx import default_threads

    print(f"cores {os.cpu_count()}, pockettts threads per session {default_threads()}")
    results = {}
    for precision in ("fp32", "int8", "int4"):
        try:
            tts = PocketTTS.open(runtime="onnx", model_dir=args.model_dir, precision=precision)
        except ValueError as exc:
            print(f"{precision}: skipped ({exc})")
            continue
        voice = tts.voices.load(args.voice_file) if args.voice_file else None
        audio, total, ttfa = run(tts, voice, args.repeats)
        results[precision] = audio
        frames = len(audio) // tts._samples_per_frame
        line = (
            f"{precision:5s} {frames} frames  {1000 * total / frames:6.1f} ms/frame  "
            f"RTFx {len(audio) / tts.sample_rate / total:5.2f}  "
            f"first audio {1000 * ttfa:5.0f} ms"
        )
        if precision != "fp32" and "fp32" in results:
            ref = results["fp32"]
            diff = audio - ref
            snr = 10 * np.log10(np.sum(ref**2) / max(np.sum(diff**2), 1e-30))
            line += f"  vs fp32: max|diff| {np.abs(diff).max():.3g}, SNR {snr:5.1f} dB"
        print(line, flush=True)


if __name__ == "__main__":
    main()
