"""FluidAudio's Core ML model contracts, as data shared by the runtime and the twin builder.

Facts from FluidAudio's Swift code and the mobius conversion scripts (see
shared/docs/fluidaudio-pockettts.md sections 4-6), stated for any model
config: the released packs are the case d_model 1024, 16 heads of 64,
6 or 24 layers, a Mimi decoder with ratios (6, 5, 4) and 2 transformer
layers. The runtime checks every model's inputs against these shapes before
it runs anything, so a pack for another model fails with a message that
names the tensor instead of a Core ML error mid-synthesis.
"""

from __future__ import annotations

from dataclasses import dataclass

from pocketcli.config import MimiConfig, ModelConfig

# Slots of every FlowLM KV cache (positions wrap modulo this inside the graphs).
KV_SLOTS = 512
# Rows of one cond_prefill call; shorter blocks are zero-padded, ``valid_len`` says how many.
PREFILL_ROWS = 256
# Euler steps baked into flow_decoder_fused (LSD with s = i/8, t = (i+1)/8).
FUSED_DECODER_STEPS = 8
# Slots of each Mimi decoder attention ring (the layer's context is 250 positions).
MIMI_ATTENTION_SLOTS = 256
# The clone encoders take exactly 10 s at 24 kHz and return 125 frames.
ENCODER_SAMPLES = 240_000
ENCODER_FRAMES = 125

MIMI_LATENT_INPUT = "latent"
FUSED_DECODER_OUTPUT = "latent_final"
ENCODER_MODELS = ("mimi_encoderv3", "mimi_encoderv2")  # pack's own, then the root fallback


@dataclass(frozen=True)
class StateShape:
    """One Mimi decoder state input: FluidAudio's name and the shape the config implies."""

    name: str
    shape: tuple[int, ...]

    @property
    def pass_through(self) -> bool:
        """``*_first`` flags and zero-length contexts come back under their own name."""
        return self.name.endswith("_first") or 0 in self.shape


def mimi_states(cfg: MimiConfig) -> list[StateShape]:
    """The decoder's state inputs in FluidAudio's canonical order (24 for the released models).

    upsample, the attention rings with their offsets, the first conv, then per
    upsampling ratio its transposed conv and residual block (two convs), then
    the final conv. Every conv has a ``_first`` flag (used by replicate
    padding only; the released decoders pad with zeros).
    """
    sn, tr = cfg.decoder_seanet, cfg.decoder_transformer
    if sn.n_residual_layers != 1:
        raise ValueError(
            "FluidAudio's Mimi decoder has one residual block per ratio,"
            f" this config has {sn.n_residual_layers}"
        )
    first = (1,)
    states: list[StateShape] = []
    if cfg.upsample_stride > 1:
        states.append(StateShape("upsample_partial", (1, sn.dimension, cfg.upsample_stride)))
    for j in range(tr.num_layers):
        states += [
            StateShape(
                f"attn{j}_cache",
                (2, 1, MIMI_ATTENTION_SLOTS, tr.num_heads, tr.d_model // tr.num_heads),
            ),
            StateShape(f"attn{j}_offset", (1,)),
        ]
    mult = 2 ** len(sn.ratios)
    states += [
        StateShape("conv0_prev", (1, sn.dimension, sn.kernel_size - 1)),
        StateShape("conv0_first", first),
    ]
    for r, ratio in enumerate(sn.ratios):
        channels = mult * sn.n_filters // 2
        states += [
            StateShape(f"convtr{r}_partial", (1, channels, ratio)),
            StateShape(f"res{r}_conv0_prev", (1, channels, sn.residual_kernel_size - 1)),
            StateShape(f"res{r}_conv0_first", first),
            StateShape(f"res{r}_conv1_prev", (1, channels // sn.compress, 0)),
            StateShape(f"res{r}_conv1_first", first),
        ]
        mult //= 2
    states += [
        StateShape("conv_final_prev", (1, sn.n_filters, sn.last_kernel_size - 1)),
        StateShape("conv_final_first", first),
    ]
    return states


@dataclass(frozen=True)
class FlowDims:
    """The FlowLM sizes every contract is written in."""

    layers: int
    kv_heads: int
    head_dim: int
    d_model: int
    cond_dim: int
    latent: int

    @classmethod
    def of(cls, cfg: ModelConfig) -> FlowDims:
        fl = cfg.flow_lm
        t = fl.transformer
        return cls(t.num_layers, t.kv_heads, t.head_dim, t.d_model, fl.cond_dim, fl.latent_dim)

    def cache(self, slots: int, split: bool) -> tuple[int, ...]:
        """One layer's cache: rank-5 K/V pair (gpu) or rank-4 K or V alone (ane)."""
        if split:
            return (1, slots, self.kv_heads, self.head_dim)
        return (2, 1, slots, self.kv_heads, self.head_dim)


def cache_inputs(dims: FlowDims, slots: int, split: bool) -> dict[str, tuple[int, ...]]:
    """Input name -> shape for the per-layer caches and positions of one FlowLM model."""
    shapes: dict[str, tuple[int, ...]] = {}
    for i in range(dims.layers):
        if split:
            shapes[f"k_cache{i}"] = dims.cache(slots, True)
            shapes[f"v_cache{i}"] = dims.cache(slots, True)
        else:
            shapes[f"cache{i}"] = dims.cache(slots, False)
        shapes[f"position{i}"] = (1,)
    return shapes


def conditioner_inputs(
    dims: FlowDims, slots: int, rows: int, split: bool
) -> dict[str, tuple[int, ...]]:
    return {
        "conditioning": (1, rows, dims.d_model),
        "valid_len": (1,),
        **cache_inputs(dims, slots, split),
    }


def flowlm_inputs(dims: FlowDims, slots: int, split: bool) -> dict[str, tuple[int, ...]]:
    shapes: dict[str, tuple[int, ...]] = {"sequence": (1, 1, dims.latent)}
    if not split:
        shapes["bos_emb"] = (dims.latent,)  # rank-5 graphs substitute it for a NaN sequence
    return {**shapes, **cache_inputs(dims, slots, split)}


def flow_decoder_inputs(dims: FlowDims) -> dict[str, tuple[int, ...]]:
    return {"transformer_out": (1, dims.cond_dim), "latent_init": (1, dims.latent)}
