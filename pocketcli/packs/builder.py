"""Building an ONNX model pack from a Kyutai checkpoint, torch-free.

Input: ``model.safetensors`` in pocket-tts 4.0.1's layout, its config YAML
and its tokenizer. Output: a pack directory (see ``manifest.py``). The pack
is assembled in a temporary sibling directory and renamed into place, so an
interrupted build never leaves a pack that looks complete.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from safetensors.numpy import save_file

from pocketcli.atomic import FolderKind, atomic_folder
from pocketcli.config import ModelConfig
from pocketcli.packs.checkpoint import Weights, check_checkpoint, read_checkpoint
from pocketcli.packs.encoder_weights import cloning_support
from pocketcli.packs.flowlm_graphs import (
    build_flow_head,
    build_flowlm_step,
    build_flowlm_step_batch,
    build_text_embedding,
)
from pocketcli.packs.graph_files import remove_graph, save_graph
from pocketcli.packs.manifest import (
    BATCH_GRAPHS,
    ENCODER_GRAPH,
    FORMAT,
    MANIFEST_NAME,
    MIMI_BATCH_GRAPH,
    PRECISIONS,
    STAMP_NAME,
    PackError,
    PackManifest,
    read_json_file,
)
from pocketcli.packs.mimi_encoder_graph import build_mimi_encoder
from pocketcli.packs.mimi_graphs import build_mimi_decoder
from pocketcli.packs.quantize import quantise_int4, quantise_int8, quantise_rows_int8

log = logging.getLogger(__name__)

# Graphs whose weight MatMuls are quantised (int8, int4); the text table is a lookup, and
# the voice encoder runs once per voice, so it stays fp32 where quality matters most.
_QUANTISED = ("flowlm_step", "flow_head", "mimi_decoder")
# int4 packs share the int8 Mimi decoder: 4-bit blocks are no smaller in any way that
# matters for its 10 MB, and on its convolution shapes they were both slower (10.6 against
# 5.9 ms per frame) and further from fp32 (27 against 40 dB SNR) on the full-size decoder.
_INT4_TAKES_INT8 = ("mimi_decoder",)
CONSTANTS_FILE = "constants.safetensors"
# The batched graphs' int8 is per-row dynamic int8 (a scale per row, sums in integers) so
# that a row never depends on the other rows of its batch.
_BATCH_QUANTISERS = {"int8": quantise_rows_int8, "int4": quantise_int4}

Progress = Callable[[str], None]


def _pack_files(folder: Path) -> dict[str, Any] | None:
    try:
        d = read_json_file(folder / MANIFEST_NAME)
    except PackError:
        return None
    files = d.get("files") if isinstance(d, dict) and d.get("format") == FORMAT else None
    return files if isinstance(files, dict) else None


# A folder the builder wrote: its pack.json, and only the files that pack.json lists.
PACK_FOLDER = FolderKind(
    "model pack",
    lambda folder: _pack_files(folder) is not None,
    lambda folder: (MANIFEST_NAME, STAMP_NAME, *(_pack_files(folder) or {})),
)


def tokenizer_kind(path: Path, declared: str | None = None) -> str:
    if declared in ("tokenizers", "json") or path.suffix == ".json":
        return "tokenizers"
    return "sentencepiece"


def build_pack(
    checkpoint: str | Path,
    config: ModelConfig,
    tokenizer: str | Path,
    out_dir: str | Path,
    precisions: Sequence[str] = ("fp32",),
    source: dict[str, Any] | None = None,
    progress: Progress | None = None,
    force: bool = False,
) -> PackManifest:
    """Writes a pack to ``out_dir`` (replacing a pack the builder wrote there, or any
    folder with ``force``: ``atomic.check_folder_output``) and returns its manifest."""
    out_dir = Path(out_dir)
    tokenizer = Path(tokenizer)
    bad = [p for p in precisions if p not in PRECISIONS]
    if bad or not precisions:
        raise ValueError(f"unknown precision {bad}; choose from {', '.join(PRECISIONS)}")
    if not tokenizer.is_file():
        raise FileNotFoundError(f"tokenizer not found: {tokenizer}")
    say = progress or (lambda _msg: None)

    say("reading checkpoint")
    weights = read_checkpoint(checkpoint)
    check_checkpoint(weights, config)

    with atomic_folder(out_dir, PACK_FOLDER, force=force) as work:
        origin = {"checkpoint_path": str(Path(checkpoint).resolve()), **(source or {})}
        manifest = _write_pack(weights, config, tokenizer, work, precisions, origin, say)
    return manifest


def write_batch_graphs(
    weights: Weights, config: ModelConfig, directory: Path, precisions: Sequence[str]
) -> dict[str, dict[str, str]]:
    """Writes the batched graphs of each precision into ``directory``; returns their files.

    The batched Mimi decoder is fp32's only: its row-independent int8 forms were slower
    per frame than one dynamic-int8 call per stream at every batch size measured
    (full-size decoder, CPU ms per frame at 1/2/4/8 rows: weight-only 8-bit blocks
    19.5/21.3/17.4/18.9, fp32 12.2/11.8/14.1/16.4, per stream 7.2; again with per-row
    dynamic int8, ms per tick of all rows, load average 5: per-row 15.2/25.2/53.6/119.5,
    one call per stream 12.1/21.9/47.2/99.0), so int8 and int4 packs decode each stream
    on its own, which no other stream can change.
    """
    fl = config.flow_lm
    fp32 = {name: f"{name}.onnx" for name in BATCH_GRAPHS}
    save_graph(build_flowlm_step_batch(weights, fl), directory / fp32["flowlm_step_batch"])
    save_graph(build_flow_head(weights, fl, batch=True), directory / fp32["flow_head_batch"])
    out: dict[str, dict[str, str]] = {}
    for precision in precisions:
        if precision == "fp32":
            mimi, _ = build_mimi_decoder(weights, config.mimi, batched=True)
            save_graph(mimi, directory / f"{MIMI_BATCH_GRAPH}.onnx")
            out[precision] = {**fp32, MIMI_BATCH_GRAPH: f"{MIMI_BATCH_GRAPH}.onnx"}
            continue
        out[precision] = {}
        for name, src in fp32.items():
            target = f"{name}.{precision}.onnx"
            _BATCH_QUANTISERS[precision](directory / src, directory / target)
            out[precision][name] = target
    if "fp32" not in precisions:
        for src in fp32.values():
            remove_graph(directory / src)
    return out


def _write_pack(
    weights: Weights,
    config: ModelConfig,
    tokenizer: Path,
    work: Path,
    precisions: Sequence[str],
    source: dict[str, Any],
    say: Progress,
) -> PackManifest:
    fl = config.flow_lm
    say("building text embedding")
    save_graph(build_text_embedding(weights, fl), work / "text_embedding.onnx")
    say("building FlowLM step")
    save_graph(build_flowlm_step(weights, fl), work / "flowlm_step.onnx")
    say("building flow head")
    save_graph(build_flow_head(weights, fl), work / "flow_head.onnx")
    say("building Mimi decoder")
    mimi_model, mimi_states = build_mimi_decoder(weights, config.mimi)
    save_graph(mimi_model, work / "mimi_decoder.onnx")

    fp32 = {
        name: f"{name}.onnx"
        for name in ("text_embedding", "flowlm_step", "flow_head", "mimi_decoder")
    }
    cloning = cloning_support(weights, config)
    if cloning.available:
        say("building Mimi encoder (voice cloning)")
        save_graph(build_mimi_encoder(weights, config.mimi), work / f"{ENCODER_GRAPH}.onnx")
        fp32[ENCODER_GRAPH] = f"{ENCODER_GRAPH}.onnx"
    else:
        say(f"no voice cloning: {cloning.reason}")
    graphs: dict[str, dict[str, str]] = {}
    if "fp32" in precisions:
        graphs["fp32"] = fp32
    quantisers = {"int8": quantise_int8, "int4": quantise_int4}
    for precision in quantisers:
        if precision not in precisions:
            continue
        say(f"quantising to {precision}")
        graphs[precision] = dict(fp32)
        for name in _QUANTISED:
            as_precision = "int8" if precision == "int4" and name in _INT4_TAKES_INT8 else precision
            target = f"{name}.{as_precision}.onnx"
            if not (work / target).exists():  # the int8 decoder is shared with int4
                quantisers[as_precision](work / fp32[name], work / target)
            graphs[precision][name] = target
    if "fp32" not in precisions:
        for name in _QUANTISED:
            remove_graph(work / fp32[name])

    say("building batched FlowLM step, flow head and Mimi decoder")
    for precision, files in write_batch_graphs(weights, config, work, precisions).items():
        graphs[precision].update(files)

    constants = {
        "emb_mean": weights["flow_lm.emb_mean"],
        "emb_std": weights["flow_lm.emb_std"],
    }
    if fl.insert_bos_before_voice:
        constants["bos_before_voice"] = weights["flow_lm.bos_before_voice"]
    save_file(
        {k: np.ascontiguousarray(v) for k, v in constants.items()}, str(work / CONSTANTS_FILE)
    )
    shutil.copyfile(tokenizer, work / tokenizer.name)

    manifest = PackManifest(
        config=config,
        graphs=graphs,
        mimi_states=tuple(mimi_states),
        tokenizer_file=tokenizer.name,
        tokenizer_kind=tokenizer_kind(tokenizer, fl.lookup_table.tokenizer),
        constants_file=CONSTANTS_FILE,
        voice_cloning=cloning.available,
        voice_cloning_note=cloning.reason,
        source=source,
    )
    manifest.write(work)
    return manifest
