"""Peak memory (RSS) against the length of the input: it must not grow with the text.

Each case runs in its own process (so its peak RSS is its own) through the
path ``pockettts tts -o FILE`` takes: the lazy text front end, the engine and
the streamed file writer (``pocketcli.audio.output``), which keeps audio on
disk and peak-normalises it in a second pass. Cases: 1 MB of prose (the
bundled MiniMax English corpus, repeated), 1 MB without any punctuation, and
one 100,000-character word. Target (issue 12): every peak under 400 MB at int8.

On random weights EOS fires at the earliest allowed frame only by chance, so
the benchmark sets ``eos_threshold`` very low and ``frames_after_eos=0``:
every chunk is exactly 7 frames and 1 MB finishes in minutes. Memory per
chunk is bounded by the chunk's frame budget either way; the number of frames
changes the time, not the peak.

    python benchmarks/bench_memory.py                      # the tiny test pack, int8
    python benchmarks/bench_memory.py --chars 100000       # quicker
    python benchmarks/bench_memory.py --full               # full-size random model (torch)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "pocketcli" / "data" / "corpora" / "minimax-english.txt"
TINY_PACK = ROOT / "tests" / "fixtures" / "tiny" / "pack"
TINY_VOICE = ROOT / "tests" / "fixtures" / "tiny" / "voice.safetensors"


def make_text(case: str, chars: int) -> str:
    base = CORPUS.read_text(encoding="utf-8")
    if case == "prose":
        return (base * (chars // len(base) + 1))[:chars]
    if case == "unpunctuated":
        words = re.sub(r"[^A-Za-z ]+", " ", base)
        words = re.sub(r" +", " ", words)
        return (words * (chars // len(words) + 1))[:chars]
    return ("abcdefghij" * (chars // 10 + 1))[: min(chars, 100_000)]


def peak_rss_mb() -> float:
    """This process's peak RSS. Linux's VmHWM belongs to this program's own memory;
    ru_maxrss would also count the parent's peak, inherited across fork and exec."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    scale = 1 if sys.platform == "darwin" else 1024  # bytes on macOS, KB elsewhere
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / scale / 1024


def child(case: str, chars: int, pack: str, voice: str | None, precision: str) -> None:
    from pocketcli import PocketTTS
    from pocketcli.audio.output import open_audio_writer
    from pocketcli.options import SpeakOptions

    text = make_text(case, chars)
    tts = PocketTTS.open(runtime="onnx", model_dir=pack, precision=precision)
    state = tts.voices.load(voice) if voice else None
    options = SpeakOptions(seed=1, eos_threshold=-1e9, frames_after_eos=0)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "out.wav"
        with open_audio_writer(out, None, tts.sample_rate) as writer:
            for frame in tts.stream(text, state, options):
                writer.write(frame.audio, speech=not frame.is_pause)
        size = out.stat().st_size
    peak_mb = peak_rss_mb()
    print(
        json.dumps(
            {
                "case": case,
                "chars": len(text),
                "audio_s": round(writer.samples / tts.sample_rate, 1),
                "wav_mb": round(size / 2**20, 1),
                "seconds": round(time.perf_counter() - started, 1),
                "peak_rss_mb": round(peak_mb, 1),
            }
        )
    )


def full_size_pack(folder: Path, precision: str) -> tuple[str, str]:
    """The full-size english architecture on random weights, built as bench_engine does."""
    sys.path.insert(0, str(ROOT))
    from tests.support.reference import (  # noqa: PLC0415
        TOKENIZER_MODEL,
        build_reference,
        make_config,
        synthetic_voice_audio,
    )

    ref = build_reference(make_config("english", str(TOKENIZER_MODEL)), 7, folder / "ref")
    ref.build_pack(folder / "pack", precisions=("fp32", precision))
    voice = ref.voice_state_from_audio(synthetic_voice_audio(seconds=3.0), 24_000)
    ref.export_voice(voice, folder / "voice.safetensors")
    return str(folder / "pack"), str(folder / "voice.safetensors")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chars", type=int, default=1_000_000)
    parser.add_argument("--precision", default="int8")
    parser.add_argument("--full", action="store_true", help="full-size random model (slow)")
    parser.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        case, chars, pack, voice, precision = args.child
        child(case, int(chars), pack, voice or None, precision)
        return
    with tempfile.TemporaryDirectory() as tmp:
        pack, voice = (
            full_size_pack(Path(tmp), args.precision)
            if args.full
            else (str(TINY_PACK), str(TINY_VOICE))
        )
        print(f"pack {pack} ({args.precision}), target: peak RSS < 400 MB", flush=True)
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        for case in ("prose", "unpunctuated", "word"):
            cmd = [sys.executable, __file__, "--child", case, str(args.chars), pack, voice]
            result = subprocess.run(
                [*cmd, args.precision], env=env, capture_output=True, text=True, check=False
            )
            if result.returncode != 0:
                print(f"{case}: failed ({result.returncode}): {result.stderr.strip()[-300:]}")
                continue
            print(result.stdout.strip(), flush=True)


if __name__ == "__main__":
    main()
