"""Regenerates tests/fixtures/tiny: a small random model, its pack and the oracle's audio.

The committed fixture lets the rest of the suite (runtime, CLI, API) run
without torch, and still compare against numbers Kyutai's package produced.
For voice cloning it also keeps a real speech clip resampled to 24 kHz by
pocket-tts itself (so our resampler is out of the comparison), the voice
state pocket-tts clones from it, and audio spoken with that voice.

    pip install -e '.[test]'
    python scripts/make_fixture_pack.py              # both fixtures
    python scripts/make_fixture_pack.py --only loud  # tests/fixtures/loud only

tests/fixtures/loud is the same tiny model with the Mimi decoder's last convolution
scaled up (LOUD_GAIN) and its bias moved so the speech sits around LOUD_CENTRE: its raw
audio crosses zero, goes past full scale on both sides, and its negative peak is the
larger one. The tiny model's own audio is a DC offset of about 0.22 with +-0.03 on it
(never negative, never near 1), which no clipping or peak-normalising mistake can be
seen on. The loud pack is fp32 only and shares the tiny fixture's voice (the two
models differ only after the FlowLM).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pocketcli.config import ModelConfig  # noqa: E402
from pocketcli.packs.builder import build_pack, write_batch_graphs  # noqa: E402
from pocketcli.packs.checkpoint import read_checkpoint  # noqa: E402
from pocketcli.packs.graph_files import save_graph  # noqa: E402
from pocketcli.packs.manifest import MIMI_BATCH_GRAPH, PackManifest  # noqa: E402
from pocketcli.packs.mimi_graphs import build_mimi_decoder  # noqa: E402
from pocketcli.packs.quantize import quantise_int8  # noqa: E402
from tests.support.reference import (  # noqa: E402
    TOKENIZER_MODEL,
    build_reference,
    make_config,
    synthetic_voice_audio,
)

WEIGHT_SEED = 2026
TEXT = "Hello world. This fixture speaks two short chunks!"
MAX_TOKENS = 12
CLONE_SOURCE = (
    ROOT
    / "tests"
    / "data"
    / "speech"
    / "librispeech"
    / ("librispeech_test_other_7902-96591-0000.wav")
)
CLONE_TEXT = "Hello world."
LOUD_GAIN = 50.0
LOUD_CENTRE = -0.3
LAST_CONV = "mimi.decoder.model.11.conv"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=ROOT / "tests" / "fixtures" / "tiny")
    parser.add_argument(
        "--batch-graphs",
        action="store_true",
        help=(
            "only (re)write the scheduler's batched graphs in the existing pack, as the"
            " builder writes them now (nothing else moves)"
        ),
    )
    parser.add_argument(
        "--mimi-decoder",
        action="store_true",
        help=(
            "only (re)write the Mimi decoder graphs (every precision, batched too) and their"
            " states in the existing pack, as the builder writes them now"
        ),
    )
    parser.add_argument("--loud-out", type=Path, default=ROOT / "tests" / "fixtures" / "loud")
    parser.add_argument("--only", choices=("tiny", "loud"), help="build one fixture only")
    args = parser.parse_args()
    if args.batch_graphs:
        add_batch_graphs(args.out / "pack", args.out / "model.safetensors")
        return
    if args.mimi_decoder:
        rewrite_mimi_decoder(args.out / "pack", args.out / "model.safetensors")
        return
    if args.only != "loud":
        _tiny_fixture(args.out)
    if args.only != "tiny":
        _loud_fixture(args.loud_out, args.out)


def _tiny_fixture(out: Path) -> None:
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
    build_pack(
        out / "model.safetensors",
        ModelConfig.from_dict(config),
        TOKENIZER_MODEL,
        out / "pack",
        precisions=("fp32", "int8"),
        source={
            "checkpoint": f"random weights (tests/oracle, seed {WEIGHT_SEED})",
            "checkpoint_path": "../model.safetensors",
        },
    )

    voice = ref.voice_state_from_audio(synthetic_voice_audio(seconds=2.0), 24_000)
    ref.export_voice(voice, out / "voice.safetensors")
    run = ref.generate(TEXT, voice, temperature=0.0, seed=0, max_tokens=MAX_TOKENS)
    np.save(out / "reference_audio.npy", run.audio.astype(np.float32))
    (out / "reference.json").write_text(
        json.dumps(
            {
                "text": TEXT,
                "max_tokens": MAX_TOKENS,
                "temperature": 0.0,
                "frames_per_chunk": [c.emitted_frames for c in run.chunks],
                "token_ids": [c.token_ids for c in run.chunks],
                "made_by": (
                    "pocket-tts 4.0.1 (Kyutai) on random weights; scripts/make_fixture_pack.py"
                ),
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )
    reference = json.loads((out / "reference.json").read_text(encoding="utf-8"))
    reference["clone"] = _clone_fixture(ref, out)
    (out / "reference.json").write_text(json.dumps(reference, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out}")


def add_batch_graphs(pack: Path, checkpoint: Path) -> None:
    """Writes the batched graphs as the builder writes them now: the ones the pack lacks
    are added, the ones it has are replaced where their bytes differ (a new quantiser);
    its other files and the oracle's reference audio stay exactly as they are."""
    manifest = PackManifest.read(pack)
    weights = read_checkpoint(checkpoint)
    with tempfile.TemporaryDirectory() as tmp:
        built = write_batch_graphs(weights, manifest.config, Path(tmp), manifest.precisions)
        changed = []
        for file in sorted({f for g in built.values() for f in g.values()}):
            for part in (file, f"{file}.data"):
                new, old = Path(tmp) / part, pack / part
                if new.exists() and (not old.exists() or new.read_bytes() != old.read_bytes()):
                    shutil.copyfile(new, old)
                    changed.append(part)
    graphs = {p: {**g, **built.get(p, {})} for p, g in manifest.graphs.items()}
    replace_manifest = type(manifest)(**{**manifest.__dict__, "graphs": graphs})
    replace_manifest.write(pack)
    print(f"wrote {changed or 'nothing new'} in {pack}")


def rewrite_mimi_decoder(pack: Path, checkpoint: Path) -> None:
    """Writes the pack's Mimi decoder graphs (one-stream fp32 and int8, batched fp32) and
    its ``mimi_states`` as the builder writes them now; nothing else moves."""
    manifest = PackManifest.read(pack)
    weights = read_checkpoint(checkpoint)
    names = {f for g in manifest.graphs.values() for f in g.values()}
    names = {f for f in names if f.startswith("mimi_decoder")}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        model, states = build_mimi_decoder(weights, manifest.config.mimi)
        save_graph(model, work / "mimi_decoder.onnx")
        quantise_int8(work / "mimi_decoder.onnx", work / "mimi_decoder.int8.onnx")
        batch, _ = build_mimi_decoder(weights, manifest.config.mimi, batched=True)
        save_graph(batch, work / f"{MIMI_BATCH_GRAPH}.onnx")
        for file in sorted(names):
            for part in (file, f"{file}.data"):
                if (work / part).exists():
                    shutil.copyfile(work / part, pack / part)
    replace(manifest, mimi_states=tuple(states)).write(pack)
    print(f"wrote {sorted(names)} in {pack}")


def _clone_fixture(ref, out: Path) -> dict:
    """The oracle's cloning of a real clip, fed the 24 kHz float samples we store."""
    import soundfile as sf
    import torch
    from pocket_tts.data.audio_utils import convert_audio

    samples, rate = sf.read(CLONE_SOURCE, dtype="float32")
    prompt = convert_audio(torch.from_numpy(samples)[None], rate, 24_000, 1)[0].numpy()
    sf.write(out / "clone_prompt_24k.wav", prompt, 24_000, subtype="FLOAT")
    stored, _ = sf.read(out / "clone_prompt_24k.wav", dtype="float32")
    voice = ref.voice_state_from_audio(stored, 24_000)
    ref.export_voice(voice, out / "clone_voice.safetensors")
    run = ref.generate(CLONE_TEXT, voice, temperature=0.0, seed=0)
    np.save(out / "clone_reference_audio.npy", run.audio.astype(np.float32))
    return {
        "source": str(CLONE_SOURCE.relative_to(ROOT)),
        "prompt": "clone_prompt_24k.wav",
        "voice": "clone_voice.safetensors",
        "text": CLONE_TEXT,
        "audio": "clone_reference_audio.npy",
    }


def _loud_fixture(out: Path, tiny: Path) -> None:
    """The tiny model with a loud last decoder convolution, and the oracle's numbers for it."""
    from safetensors.numpy import load_file, save_file

    from tests.support.reference import Reference

    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    config = yaml.safe_load((tiny / "config.yaml").read_text(encoding="utf-8"))
    config["flow_lm"]["lookup_table"]["tokenizer_path"] = str(TOKENIZER_MODEL)
    quiet = json.loads((tiny / "reference.json").read_text(encoding="utf-8"))
    raw = np.load(tiny / "reference_audio.npy")[1920:]  # after the first frame's fade-in
    tensors = load_file(str(tiny / "model.safetensors"))
    bias = tensors[f"{LAST_CONV}.bias"]
    level = float(np.median(raw)) - float(bias[0])  # the convolution's output before its bias
    tensors[f"{LAST_CONV}.weight"] = (tensors[f"{LAST_CONV}.weight"] * LOUD_GAIN).astype(np.float32)
    tensors[f"{LAST_CONV}.bias"] = np.full_like(bias, LOUD_CENTRE - LOUD_GAIN * level)
    with tempfile.TemporaryDirectory() as tmp:
        checkpoint = Path(tmp) / "model.safetensors"
        save_file(tensors, str(checkpoint))
        on_disk = dict(config, weights_path=str(checkpoint))
        config_path = Path(tmp) / "config.yaml"
        config_path.write_text(yaml.safe_dump(on_disk, sort_keys=False), encoding="utf-8")
        ref = Reference.load(config_path)
        config["flow_lm"]["lookup_table"]["tokenizer_path"] = "tokenizer.model"
        build_pack(
            checkpoint,
            ModelConfig.from_dict(config),
            TOKENIZER_MODEL,
            out / "pack",
            precisions=("fp32",),
            source={
                "checkpoint": (
                    f"random weights (tests/oracle, seed {WEIGHT_SEED}), last decoder "
                    f"convolution x{LOUD_GAIN:g}, speech centred at {LOUD_CENTRE:g}"
                ),
                "checkpoint_path": None,  # not kept: make_fixture_pack.py rebuilds it
            },
        )
    voice = ref.voice_state_from_audio(synthetic_voice_audio(seconds=2.0), 24_000)
    run = ref.generate(quiet["text"], voice, temperature=0.0, seed=0, max_tokens=MAX_TOKENS)
    audio = run.audio.astype(np.float32)
    np.save(out / "reference_audio.npy", audio)
    (out / "reference.json").write_text(
        json.dumps(
            {
                "text": quiet["text"],
                "max_tokens": MAX_TOKENS,
                "temperature": 0.0,
                "voice": "../tiny/voice.safetensors",
                "frames_per_chunk": [c.emitted_frames for c in run.chunks],
                "min": float(audio.min()),
                "max": float(audio.max()),
                "made_by": (
                    "pocket-tts 4.0.1 (Kyutai) on the tiny fixture's random weights with a "
                    "loud last decoder convolution; scripts/make_fixture_pack.py --only loud"
                ),
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )
    print(f"wrote {out}: raw audio from {audio.min():.3f} to {audio.max():.3f}")


if __name__ == "__main__":
    main()
