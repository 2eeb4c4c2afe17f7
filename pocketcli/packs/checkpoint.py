"""Reading a Kyutai checkpoint (``model.safetensors``) without torch.

The keys and shapes are those of ``TTSModel.state_dict()`` in pocket-tts
4.0.1. Everything is checked against the config before a graph is built, so a
checkpoint that does not fit its config fails with a message that names the
tensor instead of a shape error deep inside ONNX Runtime.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pocketcli.config import ModelConfig
from pocketcli.errors import CheckpointError as CheckpointError  # defined there; re-exported
from pocketcli.tensorfile import TensorFile, TensorFileError

Weights = dict[str, np.ndarray]


def read_checkpoint(path: str | Path) -> Weights:
    """Every tensor of a safetensors checkpoint as float32, read one tensor at a time.

    F32, F16 and BF16 (Kyutai's released files), also mixed in one file, are
    upcast exactly; F64 is rounded as torch's ``load_state_dict`` does. A
    tensor of another dtype, or holding NaN or infinity, is a CheckpointError
    naming it. Peak memory is the float32 weights plus one tensor's raw bytes.
    """
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint not found: {path}")
    weights: Weights = {}
    try:
        with TensorFile(path) as f:
            for name, info in f.tensors.items():
                if not info.is_float:
                    raise CheckpointError(
                        f"{path}: tensor {name} has dtype {info.dtype}; a checkpoint holds"
                        " float tensors (F32, F16 or BF16)"
                    )
                value = f.read(name)
                if not np.isfinite(value).all():
                    raise CheckpointError(f"{path}: tensor {name} holds NaN or infinite values")
                weights[name] = value
    except TensorFileError as exc:
        raise CheckpointError(str(exc)) from None
    return weights


def checkpoint_shapes(path: str | Path) -> dict[str, tuple[int, ...]]:
    """Name -> shape from the header alone (no tensor is read)."""
    with TensorFile(path) as f:
        return {name: info.shape for name, info in f.tensors.items()}


def fits_config(shapes: dict[str, tuple[int, ...]], cfg: ModelConfig) -> bool:
    """True when every tensor the graphs need is present with the shape ``cfg`` implies."""
    return all(shapes.get(key) == shape for key, shape in expected_shapes(cfg).items())


def expected_shapes(cfg: ModelConfig) -> dict[str, tuple[int, ...]]:
    """Shapes of the FlowLM tensors the graphs use, derived from the config."""
    fl = cfg.flow_lm
    t = fl.transformer
    d, latent = t.d_model, fl.latent_dim
    kv = t.kv_heads * t.head_dim
    lut = fl.lookup_table
    shapes: dict[str, tuple[int, ...]] = {
        "flow_lm.bos_emb": (latent,),
        "flow_lm.emb_std": (latent,),
        "flow_lm.emb_mean": (latent,),
        "flow_lm.input_linear.weight": (d, latent),
        "flow_lm.conditioner.embed.weight": (lut.n_bins + 1, lut.rank or lut.dim),
        "flow_lm.out_norm.weight": (d,),
        "flow_lm.out_eos.weight": (1, fl.cond_dim),
        "flow_lm.flow_net.cond_embed.weight": (fl.flow.dim, fl.cond_dim),
        "flow_lm.flow_net.input_proj.weight": (fl.flow.dim, latent),
        "flow_lm.flow_net.final_layer.linear.weight": (latent, fl.flow.dim),
    }
    for i in range(t.num_layers):
        p = f"flow_lm.transformer.layers.{i}"
        shapes[f"{p}.self_attn.in_proj.weight"] = (t.query_dim + 2 * kv, d)
        shapes[f"{p}.self_attn.out_proj.weight"] = (d, t.query_dim)
        shapes[f"{p}.linear1.weight"] = (t.ffn_dim, d)
        shapes[f"{p}.linear2.weight"] = (d, t.ffn_dim)
    for i in range(fl.flow.depth):
        shapes[f"flow_lm.flow_net.res_blocks.{i}.adaLN_modulation.1.weight"] = (
            3 * fl.flow.dim,
            fl.flow.dim,
        )
    if fl.insert_bos_before_voice:
        shapes["flow_lm.bos_before_voice"] = (1, 1, d)
    mimi = cfg.mimi
    shapes["mimi.quantizer.output_proj.weight"] = (
        mimi.quantizer_output_dimension,
        mimi.quantizer_dimension,
        1,
    )
    return shapes


def check_checkpoint(weights: Weights, cfg: ModelConfig) -> None:
    missing = [k for k in expected_shapes(cfg) if k not in weights]
    if missing:
        shown = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
        raise CheckpointError(
            f"checkpoint lacks {len(missing)} tensor(s) its config needs: {shown}"
        )
    for key, shape in expected_shapes(cfg).items():
        if tuple(weights[key].shape) != shape:
            raise CheckpointError(
                f"{key} has shape {list(weights[key].shape)}, the config implies {list(shape)}"
                " (is this checkpoint for another model size?)"
            )
    for key, value in weights.items():
        if not np.isfinite(value).all():
            raise CheckpointError(f"{key} holds NaN or infinite values")
