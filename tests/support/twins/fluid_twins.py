"""A FluidAudio-layout pack of ONNX twins, built from a Kyutai checkpoint without torch.

``build_twin_pack`` writes ``<root>/v2.1/<lang>/`` as FluidAudio's
downloader leaves it, with ``<model>.onnx`` where FluidAudio has
``<model>.mlmodelc``: the CoreML runtime's host code then runs on it through
``OnnxPredictor`` on any OS, and its output can be compared with the
pocket-tts oracle on the same weights. ``write_constants_bin`` writes the
``constants_bin/`` FluidAudio's loader reads: raw little-endian float32
``.bin`` files, ``tokenizer.model`` and voices as Kyutai voice states.

fp32 twins stand in for FluidAudio's fp16 models (same names; the numbers
then match pocket-tts to float rounding); ``flowlm_stepv2`` is the twin with
int8 weight MatMuls, as FluidAudio's int8 file quantises its linears.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import onnx

from pocketcli.config import ModelConfig
from pocketcli.packs.builder import quantise_int8
from pocketcli.packs.checkpoint import Weights, check_checkpoint, read_checkpoint
from pocketcli.runtimes.coreml import constants as k
from pocketcli.runtimes.coreml.contract import PREFILL_ROWS
from pocketcli.runtimes.coreml.encoder import PACK_ENCODER, RECOVER_PINV, ROOT_ENCODER
from pocketcli.runtimes.coreml.units import FLOWLM_MODELS
from tests.support.twins.fluid_twin_flowlm import (
    build_cond_prefill_twin,
    build_flow_decoder_fused_twin,
    build_flowlm_step_twin,
)
from tests.support.twins.fluid_twin_mimi import build_mimi_decoder_twin, build_voice_encoder_twin


def _write_floats(path: Path, array: np.ndarray) -> None:
    np.ascontiguousarray(array, dtype="<f4").tofile(path)


def text_embed_table(w: Weights, cfg: ModelConfig) -> np.ndarray:
    """``[vocab, d_model]``: the conditioner's table, projected when it is low-rank."""
    table = w["flow_lm.conditioner.embed.weight"]
    if cfg.flow_lm.lookup_table.rank is not None:
        table = table @ w["flow_lm.conditioner.proj.weight"].T
    return table.astype(np.float32)


def write_constants_bin(
    w: Weights,
    cfg: ModelConfig,
    tokenizer: Path,
    pack_dir: Path,
    voices: Mapping[str, Path] | None = None,
    speaker_proj: bool = False,
    mimi_init_state: Mapping[str, np.ndarray] | None = None,
) -> Path:
    """``pack_dir/constants_bin/`` as FluidAudio's ``pack_constants_bin.py`` lays it out."""
    out = pack_dir / k.CONSTANTS_DIR
    out.mkdir(parents=True, exist_ok=True)
    _write_floats(out / k.TEXT_EMBED_TABLE, text_embed_table(w, cfg))
    _write_floats(out / k.BOS_EMB, w["flow_lm.bos_emb"].reshape(-1))
    if "flow_lm.bos_before_voice" in w:
        _write_floats(out / k.BOS_BEFORE_VOICE, w["flow_lm.bos_before_voice"].reshape(-1))
    if speaker_proj:  # FluidAudio ships it with the 24-layer packs
        _write_floats(out / k.SPEAKER_PROJ, w["flow_lm.speaker_proj_weight"])
    shutil.copyfile(tokenizer, out / k.TOKENIZER)
    for name, path in (voices or {}).items():
        shutil.copyfile(path, out / f"{name}.safetensors")
    if mimi_init_state:
        (out / k.MIMI_INIT_STATE).mkdir(exist_ok=True)
        for name, array in mimi_init_state.items():
            _write_floats(out / k.MIMI_INIT_STATE / f"{name}.bin", array)
    return out


def build_twin_pack(
    checkpoint: str | Path,
    config: ModelConfig,
    tokenizer: str | Path,
    pack_dir: str | Path,
    *,
    placements: Sequence[str] = ("gpu",),
    precisions: Sequence[str] = ("fp16",),
    voices: Mapping[str, Path] | None = None,
    encoder: str | None = "pack",
    speaker_proj: bool = False,
    recover_pinv: np.ndarray | None = None,
    mimi_init_state: Mapping[str, np.ndarray] | None = None,
    prefill_rows: int = PREFILL_ROWS,
) -> Path:
    """Writes the twins and ``constants_bin/`` into ``pack_dir`` (a ``v2.1/<lang>`` path).

    ``encoder``: ``"pack"`` writes ``mimi_encoderv3`` into the pack, ``"root"``
    writes ``mimi_encoderv2`` two levels up (FluidAudio's repository root,
    with ``encoder_recover_pinv.bin`` when ``recover_pinv`` is given), None
    writes no encoder. ``prefill_rows`` (FluidAudio: 256) can be made small
    so that a test's prompts span several conditioner calls.
    """
    pack_dir = Path(pack_dir)
    w = read_checkpoint(checkpoint)
    check_checkpoint(w, config)
    fl = config.flow_lm
    pack_dir.mkdir(parents=True, exist_ok=True)
    written: list[str] = []

    def save(model: onnx.ModelProto, directory: Path, name: str) -> None:
        onnx.save_model(model, str(directory / f"{name}.onnx"))
        written.append(name)

    if "gpu" in placements:
        save(build_cond_prefill_twin(w, fl, rows=prefill_rows), pack_dir, "cond_prefill")
        step = build_flowlm_step_twin(w, fl)
        save(step, pack_dir, FLOWLM_MODELS["fp16"])
        if "int8" in precisions:
            quantise_int8(
                pack_dir / f"{FLOWLM_MODELS['fp16']}.onnx",
                pack_dir / f"{FLOWLM_MODELS['int8']}.onnx",
            )
            written.append(FLOWLM_MODELS["int8"])
            if "fp16" not in precisions:
                (pack_dir / f"{FLOWLM_MODELS['fp16']}.onnx").unlink()
                written.remove(FLOWLM_MODELS["fp16"])
    if "ane" in placements:
        save(
            build_cond_prefill_twin(w, fl, split=True, rows=prefill_rows),
            pack_dir,
            "cond_prefill_ane",
        )
        save(build_flowlm_step_twin(w, fl, split=True), pack_dir, "flowlm_step_ane")
    save(build_flow_decoder_fused_twin(w, fl), pack_dir, "flow_decoder_fused")
    save(build_mimi_decoder_twin(w, config.mimi), pack_dir, "mimi_decoder")
    if encoder == "pack":
        save(build_voice_encoder_twin(w, config.mimi), pack_dir, PACK_ENCODER)
    elif encoder == "root":
        root = pack_dir.parent.parent
        save(build_voice_encoder_twin(w, config.mimi), root, ROOT_ENCODER)
        if recover_pinv is not None:
            _write_floats(root / RECOVER_PINV, recover_pinv)
    elif encoder is not None:
        raise ValueError(f"encoder must be 'pack', 'root' or None, not {encoder!r}")
    write_constants_bin(w, config, Path(tokenizer), pack_dir, voices, speaker_proj, mimi_init_state)
    manifest = {
        "version": "2.1",
        "base": "v2",
        "kind": "onnx-twin",
        "self_contained": True,
        "models": written,
    }
    (pack_dir / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return pack_dir
