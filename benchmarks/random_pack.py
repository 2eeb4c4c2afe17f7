"""The full-size English architecture with random weights, built once into a work folder.

Real weights cannot be downloaded where this is built; benchmarks run on this
pack (Kyutai's english config, random weights from seed 7, built by our
torch-free builder) and a 3 s synthetic cloned voice. Needs the test extra
(torch and pocket-tts build the reference) the first time only.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def cached_random_pack(work: Path, precision: str = "int8") -> tuple[Path, Path]:
    """(pack, voice file) under ``work``, built unless a pack with ``precision`` is there."""
    pack, voice = work / "pack", work / "voice.safetensors"
    manifest = pack / "pack.json"
    if (
        manifest.is_file()
        and voice.is_file()
        and precision in json.loads(manifest.read_text())["graphs"]
    ):
        return pack, voice
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from tests.support.reference import (
        TOKENIZER_MODEL,
        build_reference,
        make_config,
        synthetic_voice_audio,
    )

    print(f"building the english architecture with random weights ({precision}) ...", flush=True)
    ref = build_reference(make_config("english", str(TOKENIZER_MODEL)), 7, work / "ref")
    ref.build_pack(pack, precisions=(precision,))
    ref.export_voice(ref.voice_state_from_audio(synthetic_voice_audio(seconds=3.0), 24_000), voice)
    return pack, voice
