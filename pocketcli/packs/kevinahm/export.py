"""Writing a KevinAHM v2 bundle from a Kyutai checkpoint, torch-free.

Files, as in ``KevinAHM/pocket-tts-onnx`` ``onnx/<bundle>/``: ``bundle.json``,
the tokenizer, ``bos_before_voice.npy`` (models that prefill one), and the
five graphs in fp32 and, with int8, also as ``<graph>_int8.onnx``, quantised as
that exporter does (``quantize_dynamic``: int8 weights of MatMuls, activations
quantised at run time; convolutions and RoPE stay float). Each graph is one
file, weights inside (no ``.onnx.data``), as there. ``pockettts.json`` adds the
full model config, which ``bundle.json`` does not carry, for our runner.
The bundle is assembled in a temporary sibling folder and renamed into place.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import onnx

from pocketcli.atomic import FolderKind, atomic_folder
from pocketcli.config import ModelConfig
from pocketcli.packs.checkpoint import check_checkpoint, read_checkpoint
from pocketcli.packs.encoder_weights import cloning_support
from pocketcli.packs.kevinahm.graphs import (
    build_flow_lm_flow,
    build_flow_lm_main,
    build_kevinahm_mimi_decoder,
    build_kevinahm_mimi_encoder,
    build_text_conditioner,
)
from pocketcli.packs.kevinahm.metadata import (  # noqa: F401 - SIDECAR_FILE, graph_file: re-exported
    BOS_FILE,
    BUNDLE_FILE,
    GRAPHS,
    SIDECAR_FILE,
    SIDECAR_FORMAT,
    TOKENIZER_FILE,
    bundle_metadata,
    graph_file,
    write_bundle_json,
)
from pocketcli.packs.rope import ROPE_SWAP

PRECISIONS = ("fp32", "int8")
# Weights of our decoder's convolutions (written as MatMuls): float in an int8 bundle,
# as KevinAHM's (whose convolutions are Conv ops, which quantize_dynamic leaves alone).
_FLOAT_PREFIXES = (ROPE_SWAP, "dec.", "upsample.", "quantizer.")

Progress = Callable[[str], None]


def _is_our_bundle(folder: Path) -> bool:
    try:
        sidecar = json.loads((folder / SIDECAR_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(sidecar, dict) and sidecar.get("format") == SIDECAR_FORMAT


def _bundle_names(_folder: Path) -> tuple[str, ...]:
    graphs = tuple(graph_file(g, p) for g in GRAPHS for p in PRECISIONS)
    return (BUNDLE_FILE, SIDECAR_FILE, BOS_FILE, TOKENIZER_FILE, "tokenizer.json", *graphs)


# A folder this exporter wrote: its pockettts.json, and only the files a bundle has.
BUNDLE_FOLDER = FolderKind("KevinAHM bundle", _is_our_bundle, _bundle_names)


def _save(model: onnx.ModelProto, path: Path) -> None:
    onnx.save_model(model, str(path))


def quantise_like_kevinahm(src: Path, dst: Path) -> None:
    """``quantize_dynamic`` with the options of KevinAHM's scripts/quantize.py."""
    from pocketcli.packs.quantize import float_matmuls, int8_matmuls

    model = onnx.load(str(src))
    keep_float = float_matmuls(model.graph, lambda name: name.startswith(_FLOAT_PREFIXES))
    extra = {"ForceQuantizeNoType": True, "DefaultTensorType": 1}
    int8_matmuls(src, dst, keep_float, extra_options=extra)


def export_bundle(
    checkpoint: str | Path,
    config: ModelConfig,
    tokenizer: str | Path,
    out_dir: str | Path,
    bundle_name: str,
    precisions: Sequence[str] = PRECISIONS,
    source: dict | None = None,
    progress: Progress | None = None,
    force: bool = False,
) -> Path:
    """Writes the bundle to ``out_dir`` (replacing a bundle this exporter wrote there, or
    any folder with ``force``: ``atomic.check_folder_output``); returns ``out_dir``."""
    out_dir, tokenizer = Path(out_dir), Path(tokenizer)
    bad = [p for p in precisions if p not in PRECISIONS]
    if bad or not precisions:
        raise ValueError(f"unknown precision {bad}; a bundle has {', '.join(PRECISIONS)}")
    say = progress or (lambda _msg: None)
    say("reading checkpoint")
    weights = read_checkpoint(checkpoint)
    check_checkpoint(weights, config)
    with atomic_folder(out_dir, BUNDLE_FOLDER, "exporting", force) as work:
        fl = config.flow_lm
        builders = {
            "text_conditioner": lambda: build_text_conditioner(weights, fl),
            "flow_lm_main": lambda: build_flow_lm_main(weights, config),
            "flow_lm_flow": lambda: build_flow_lm_flow(weights, fl),
            "mimi_decoder": lambda: build_kevinahm_mimi_decoder(weights, config),
        }
        cloning = cloning_support(weights, config)
        if cloning.available:
            builders["mimi_encoder"] = lambda: build_kevinahm_mimi_encoder(weights, config.mimi)
        else:
            say(f"no mimi_encoder (no voice cloning): {cloning.reason}")
        for graph in GRAPHS:
            if graph in builders:
                say(f"building {graph}")
                _save(builders[graph](), work / graph_file(graph, "fp32"))
        if "int8" in precisions:
            for graph in GRAPHS:
                if graph in builders:
                    say(f"quantising {graph} to int8")
                    quantise_like_kevinahm(
                        work / graph_file(graph, "fp32"), work / graph_file(graph, "int8")
                    )
        tokenizer_name = TOKENIZER_FILE if tokenizer.suffix != ".json" else "tokenizer.json"
        shutil.copyfile(tokenizer, work / tokenizer_name)
        if fl.insert_bos_before_voice:
            bos = weights["flow_lm.bos_before_voice"].astype(np.float32)
            np.save(work / BOS_FILE, bos.reshape(1, 1, fl.transformer.d_model))
        write_bundle_json(work, bundle_metadata(config, bundle_name, tokenizer_name))
        sidecar = {
            "format": SIDECAR_FORMAT,
            "version": 1,
            "config": config.to_dict(),
            "precisions": [p for p in PRECISIONS if p in precisions or p == "fp32"],
            "voice_cloning": cloning.available,
            "voice_cloning_note": cloning.reason,
            "source": source or {},
        }
        (work / SIDECAR_FILE).write_text(
            json.dumps(sidecar, indent=2, sort_keys=True) + "\n", encoding="utf-8"
        )
    return out_dir
