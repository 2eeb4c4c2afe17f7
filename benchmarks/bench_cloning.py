"""Cost of cloning a 10 s voice prompt: our ONNX pack against Kyutai's pocket-tts.

Full-size english architecture with random weights (the real weights cannot
be downloaded here). Both sides get the same 24 kHz prompt (the alba source
recording, resampled by pocket-tts) and do the same work: end_on_pause, Mimi
encoder, speaker projection, FlowLM prefill of bos_before_voice + frames.
pocket-tts runs with torch's default intra-op threads, ours with
``default_threads()`` per session (the encoder and the FlowLM: 2 on a machine
with 2 or more cores; POCKETTTS_THREADS overrides); both counts and the
machine's cores are printed. After each side's first call (ours loads the
encoder graph then) the two sides alternate call by call. Prints the first
call, then min and median of the repeats, our split encoder/prefill, and
the ratio.

    pip install -e '.[test]'
    python benchmarks/bench_cloning.py [--repeats 5] [--seconds 10 30]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pocketcli import PocketTTS  # noqa: E402
from pocketcli.voices import cloning  # noqa: E402
from pocketcli.voices.prompt import prepare_prompt  # noqa: E402
from tests.support.reference import TOKENIZER_MODEL, build_reference, make_config  # noqa: E402

ALBA = ROOT / "tests" / "data" / "speech" / "kyutai-tts-voices" / "alba-mackenna_casual.wav"


def once(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def timed(fn: Callable[[], object], repeats: int) -> tuple[float, list[float]]:
    """(first call, later calls) in seconds."""
    first = once(fn)
    return first, [once(fn) for _ in range(repeats)]


def show(label: str, first: float, runs: list[float]) -> None:
    print(
        f"{label:34s} first {first:6.3f} s   min {min(runs):6.3f} s   "
        f"median {statistics.median(runs):6.3f} s",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--seconds",
        type=float,
        nargs="+",
        default=[10.0],
        help="prompt lengths to time (e.g. --seconds 10 30)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pockettts-bench-clone-") as tmp:
        run(Path(tmp), args)


def run(tmp: Path, args: argparse.Namespace) -> None:
    import soundfile as sf
    import torch
    from pocket_tts.data.audio_utils import convert_audio

    print("building the english architecture with random weights ...", flush=True)
    ref = build_reference(make_config("english", str(TOKENIZER_MODEL)), 7, tmp / "ref")
    ref.build_pack(tmp / "pack")
    samples, rate = sf.read(ALBA, dtype="float32")
    alba = convert_audio(torch.from_numpy(samples)[None], rate, 24_000, 1)[0].numpy()
    tts = PocketTTS.open(runtime="onnx", model_dir=tmp / "pack")
    from pocketcli.runtimes.onnx import default_threads

    print(
        f"cores {os.cpu_count()}, torch threads {torch.get_num_threads()},"
        f" pockettts threads per session {default_threads()}",
        flush=True,
    )
    for seconds in args.seconds:
        compare(ref, tts, np.resize(alba, int(seconds * 24_000)), args.repeats)


def compare(ref, tts: PocketTTS, prompt: np.ndarray, repeats: int) -> None:
    import torch

    print(f"\nprompt: {prompt.size / 24_000:.2f} s at 24 kHz", flush=True)
    tensor = torch.from_numpy(prompt)[None]
    sides = {
        "pocket-tts 4.0.1 get_state_for_audio_prompt": lambda: ref.model.get_state_for_audio_prompt(
            tensor
        ),
        "pockettts clone_voice (onnx fp32)": lambda: tts.voices.clone(prompt, 24_000),
    }
    # Alternate the two sides so both see the same machine load (speed drifts here).
    firsts = {label: once(fn) for label, fn in sides.items()}
    runs: dict[str, list[float]] = {label: [] for label in sides}
    for _ in range(repeats):
        for label, fn in sides.items():
            runs[label].append(once(fn))
    for label in sides:
        show(label, firsts[label], runs[label])
    oracle, ours = (statistics.median(r) for r in runs.values())

    ready = prepare_prompt(prompt, 24_000, 24_000, lambda _note: None)
    _, enc = timed(lambda: tts.runtime.encode_voice(ready), repeats)
    conditioning = tts.runtime.encode_voice(ready)
    _, pre = timed(lambda: cloning.voice_from_conditioning(tts.runtime, conditioning), repeats)
    print(
        f"  ours: encoder {statistics.median(enc):.3f} s, FlowLM prefill"
        f" {statistics.median(pre):.3f} s ({conditioning.shape[0]} frames)"
    )
    print(
        f"pockettts / pocket-tts cost (median): {ours / oracle:.2f} ({oracle / ours:.2f}x faster)",
        flush=True,
    )


if __name__ == "__main__":
    main()
