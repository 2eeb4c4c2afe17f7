"""Regenerates tests/fixtures/tiny: a small random model, its pack and the oracle's audio.

The committed fixture lets the rest of the suite (runtime, CLI, API) run
without torch, and still compare against numbers Kyutai's package produced.

    pip install -e '.[test]'
    python scripts/make_fixture_pack.py
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from oracle.reference import (  # noqa: E402
    TOKENIZER_MODEL,
    build_reference,
    make_config,
    synthetic_voice_audio,
)

from pocketcli.config import ModelConfig  # noqa: E402
from pocketcli.packs.builder import build_pack  # noqa: E402

WEIGHT_SEED = 2026
TEXT = "Hello world. This fixture speaks two short chunks!"
MAX_TOKENS = 12


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=ROOT / "tests" / "fixtures" / "tiny")
    args = parser.parse_args()
    out: Path = args.out
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)

    config = make_config("tiny", str(TOKENIZER_MODEL))
    config["flow_lm"]["lookup_table"]["tokenizer_path"] = "tokenizer.model"
    with tempfile.TemporaryDirectory() as tmp:
        ref = build_reference(make_config("tiny", str(TOKENIZER_MODEL)), WEIGHT_SEED, Path(tmp))
        shutil.copyfile(ref.checkpoint_path, out / "model.safetensors")
    with open(out / "config.yaml", "w", encoding="utf-8") as f:
        yaml.safe_dump(config, f, sort_keys=False, allow_unicode=True)
    build_pack(out / "model.safetensors", ModelConfig.from_dict(config), TOKENIZER_MODEL,
               out / "pack", precisions=("fp32", "int8"),
               source={"checkpoint": f"random weights (tests/oracle, seed {WEIGHT_SEED})",
                       "checkpoint_path": "../model.safetensors"})

    voice = ref.voice_state_from_audio(synthetic_voice_audio(seconds=2.0), 24_000)
    ref.export_voice(voice, out / "voice.safetensors")
    run = ref.generate(TEXT, voice, temperature=0.0, seed=0, max_tokens=MAX_TOKENS)
    np.save(out / "reference_audio.npy", run.audio.astype(np.float32))
    (out / "reference.json").write_text(json.dumps({
        "text": TEXT,
        "max_tokens": MAX_TOKENS,
        "temperature": 0.0,
        "frames_per_chunk": [c.emitted_frames for c in run.chunks],
        "token_ids": [c.token_ids for c in run.chunks],
        "made_by": "pocket-tts 4.0.1 (Kyutai) on random weights; scripts/make_fixture_pack.py",
    }, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
