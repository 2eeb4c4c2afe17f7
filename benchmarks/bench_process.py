"""A whole `pockettts tts` process against a whole `pocket-tts generate` process.

What a shell script pays per call: interpreter start, imports, model load and
synthesis, until the WAV is on disk, with the model already on local disk
for both. Full-size english architecture with random weights (the real
weights cannot be downloaded here), the same voice state and the same raw
text for both (ours with ``--no-normalize``; ours still runs its output
filters), each in its default threading (printed with the machine's cores);
after one warm-up call each, the commands run in turn ``--repeats`` times;
prints the median wall time of each and the ratio.

    pip install -e '.[test]'
    python benchmarks/bench_process.py [--repeats 5] [--text "Hello world."]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from oracle.reference import (  # noqa: E402
    TOKENIZER_MODEL,
    build_reference,
    make_config,
    synthetic_voice_audio,
)


def wall_seconds(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--text", default="Hello world.")
    args = parser.parse_args()
    ours_cli, theirs_cli = shutil.which("pockettts"), shutil.which("pocket-tts")
    if ours_cli is None or theirs_cli is None:
        sys.exit("needs both `pockettts` and `pocket-tts` on PATH (pip install -e '.[test]')")

    tmp = Path(tempfile.mkdtemp(prefix="pockettts-process-"))
    print("building the english architecture with random weights ...", flush=True)
    ref = build_reference(make_config("english", str(TOKENIZER_MODEL)), 7, tmp / "ref")
    ref.build_pack(tmp / "pack", precisions=("fp32", "int8"))
    voice = tmp / "voice.safetensors"
    ref.export_voice(ref.voice_state_from_audio(synthetic_voice_audio(seconds=3.0), 24_000), voice)

    commands = {}
    for precision, quantize in (("fp32", []), ("int8", ["--quantize"])):
        commands[f"pockettts tts {precision}"] = [
            ours_cli,
            "tts",
            args.text,
            "-o",
            str(tmp / "ours.wav"),
            "--model-dir",
            str(tmp / "pack"),
            "--voice-file",
            str(voice),
            "--precision",
            precision,
            "--no-normalize",
        ]
        commands[f"pocket-tts generate {precision}"] = [
            theirs_cli,
            "generate",
            "--text",
            args.text,
            "--config",
            str(tmp / "ref" / "config.yaml"),
            "--voice",
            str(voice),
            "--output-path",
            str(tmp / "theirs.wav"),
            "-q",
            *quantize,
        ]
    import torch

    from pocketcli.runtimes.onnx import default_threads

    print(
        f"cores {os.cpu_count()}, torch threads {torch.get_num_threads()},"
        f" pockettts threads per session {default_threads()}",
        flush=True,
    )
    for command in commands.values():  # warm the page cache and byte-code caches
        wall_seconds(command)
    times: dict[str, list[float]] = {label: [] for label in commands}
    for _ in range(args.repeats):
        for label, command in commands.items():
            times[label].append(wall_seconds(command))
    median = {label: statistics.median(t) for label, t in times.items()}
    for label, seconds in median.items():
        print(f"{label:28s} {seconds:6.2f} s (median of {args.repeats})")
    for precision in ("fp32", "int8"):
        ratio = median[f"pocket-tts generate {precision}"] / median[f"pockettts tts {precision}"]
        print(f"{precision}: pockettts is x{ratio:.2f} faster as a whole process")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
