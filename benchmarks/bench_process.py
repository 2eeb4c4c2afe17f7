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


def wall_seconds(command: list[str], output: Path) -> float:
    """Wall time of one run that must leave a WAV at ``output``.

    pocket-tts sometimes aborts while the interpreter shuts down (a non-zero
    status after the WAV is complete); that run still counts, with a note.
    No WAV at all ends the benchmark with one line, not a traceback.
    """
    output.unlink(missing_ok=True)
    start = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if not output.is_file() or output.stat().st_size <= 44:
        last = (done.stderr.decode(errors="replace").strip().splitlines() or ["no message"])[-1]
        sys.exit(f"{Path(command[0]).name} wrote no audio (exit {done.returncode}): {last}")
    if done.returncode != 0:
        print(
            f"note: {Path(command[0]).name} exited {done.returncode} after writing its WAV"
            " (counted)",
            file=sys.stderr,
        )
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--text", default="Hello world.")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from tests.support.reference import (
        TOKENIZER_MODEL,
        build_reference,
        make_config,
        synthetic_voice_audio,
    )

    ours_cli, theirs_cli = shutil.which("pockettts"), shutil.which("pocket-tts")
    if ours_cli is None or theirs_cli is None:
        sys.exit("needs both `pockettts` and `pocket-tts` on PATH (pip install -e '.[test]')")

    tmp = Path(tempfile.mkdtemp(prefix="pockettts-process-"))
    print("building the english architecture with random weights ...", flush=True)
    ref = build_reference(make_config("english", str(TOKENIZER_MODEL)), 7, tmp / "ref")
    ref.build_pack(tmp / "pack", precisions=("fp32", "int8"))
    voice = tmp / "voice.safetensors"
    ref.export_voice(ref.voice_state_from_audio(synthetic_voice_audio(seconds=3.0), 24_000), voice)

    ours_wav, theirs_wav = tmp / "ours.wav", tmp / "theirs.wav"
    commands: dict[str, tuple[list[str], Path]] = {}
    for precision, quantize in (("fp32", []), ("int8", ["--quantize"])):
        ours = [ours_cli, "tts", args.text, "-o", str(ours_wav), "--model-dir", str(tmp / "pack"),
                "--voice-file", str(voice), "--precision", precision, "--no-normalize"]  # fmt: skip
        theirs = [theirs_cli, "generate", "--text", args.text, "--config",
                  str(tmp / "ref" / "config.yaml"), "--voice", str(voice), "--output-path",
                  str(theirs_wav), "-q", *quantize]  # fmt: skip
        commands[f"pockettts tts {precision}"] = (ours, ours_wav)
        commands[f"pocket-tts generate {precision}"] = (theirs, theirs_wav)
    import torch

    from pocketcli.runtimes.onnx import default_threads

    print(
        f"cores {os.cpu_count()}, torch threads {torch.get_num_threads()},"
        f" pockettts threads per session {default_threads()}",
        flush=True,
    )
    for command, output in commands.values():  # warm the page cache and byte-code caches
        wall_seconds(command, output)
    times: dict[str, list[float]] = {label: [] for label in commands}
    for _ in range(args.repeats):
        for label, (command, output) in commands.items():
            times[label].append(wall_seconds(command, output))
    median = {label: statistics.median(t) for label, t in times.items()}
    for label, seconds in median.items():
        print(f"{label:28s} {seconds:6.2f} s (median of {args.repeats})")
    for precision in ("fp32", "int8"):
        ratio = median[f"pocket-tts generate {precision}"] / median[f"pockettts tts {precision}"]
        print(f"{precision}: pockettts is x{ratio:.2f} faster as a whole process")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
