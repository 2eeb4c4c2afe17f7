"""CPU-ms per frame with and without word timings, side by side in one run (issue 35).

The full-size English architecture with random weights (Kyutai's english config, seed 7;
real weights cannot be downloaded here) and the fork's English head list, built once into
``--work-dir`` by our torch-free builder (the reference needs the test extra). Each round
speaks the same text three times (old pack; new pack not asking; asking), in alternating
order, and
counts this process's CPU time per frame of each, against the same weights built without
the heads (a pack from before word timings): a stream that does not ask fetches no
attention; one that asks pays for fetching it and the words stage.

    python benchmarks/bench_words.py --precision int8 --rounds 5
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEXT = (
    "Word timings come from the model's own attention. A stream that does not ask for them "
    "should pay nothing for them, and one that asks should pay very little."
)
ENGLISH_HEADS = [{"layer": 3, "head": 8}, {"layer": 2, "head": 0}]  # the fork's english.yaml


def build(work: Path, precision: str) -> tuple[Path, Path, Path]:
    """(pack with the word heads, the same weights built without them, voice file)."""
    pack, plain, voice = work / "pack", work / "plain", work / "voice.safetensors"
    if (pack / "pack.json").is_file() and (plain / "pack.json").is_file() and voice.is_file():
        return pack, plain, voice
    sys.path.insert(0, str(ROOT))
    from pocketcli.config import ModelConfig
    from pocketcli.packs.builder import build_pack
    from tests.support.reference import (
        TOKENIZER_MODEL,
        build_reference,
        make_config,
        synthetic_voice_audio,
    )

    print("building the english architecture with random weights ...", flush=True)
    ref = build_reference(make_config("english", str(TOKENIZER_MODEL)), 7, work / "ref")
    config = copy.deepcopy(ref.config)
    config["timestamp_heads"] = ENGLISH_HEADS
    build_pack(
        ref.checkpoint_path,
        ModelConfig.from_dict(config),
        TOKENIZER_MODEL,
        pack,
        precisions=(precision,),
    )
    ref.build_pack(plain, precisions=(precision,))
    ref.export_voice(ref.voice_state_from_audio(synthetic_voice_audio(seconds=3.0), 24_000), voice)
    return pack, plain, voice


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/pockettts-bench-words"))
    parser.add_argument("--precision", default="int8")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    pack, plain, voice_file = build(args.work_dir, args.precision)
    from pocketcli import PocketTTS, SpeakOptions

    models = {
        "built before words   ": (PocketTTS.open(model_dir=plain, precision=args.precision), False),
        "new pack, not asked  ": (PocketTTS.open(model_dir=pack, precision=args.precision), False),
    }
    models["new pack, words asked"] = (models["new pack, not asked  "][0], True)
    voices = {name: tts.voices.load(voice_file) for name, (tts, _) in models.items()}
    per_frame: dict[str, list[float]] = {name: [] for name in models}
    words = 0
    for r in range(args.rounds + 1):  # the first round warms up
        order = list(models) if r % 2 else list(reversed(models))
        for name in order:
            tts, asked = models[name]
            start = time.process_time()
            frames = list(tts.stream(TEXT, voices[name], SpeakOptions(seed=r, words=asked)))
            cpu = time.process_time() - start
            if r:
                per_frame[name].append(1000 * cpu / len(frames))
            if asked:
                words = max(words, sum(len(f.words) for f in frames))
    for name, values in per_frame.items():
        print(
            f"{name}: {statistics.median(values):6.2f} CPU-ms per frame"
            f" (median of {len(values)}; min {min(values):.2f}, max {max(values):.2f})"
        )
    print(f"({words} words timed per run asking; {args.precision}, {args.rounds} rounds)")


if __name__ == "__main__":
    main()
