"""The CoreML backend: FluidAudio's published ``v2.1/<lang>/`` packs behind our Runtime.

The engine (``pocketcli.engine``) keeps all model logic it has for ONNX:
text, host noise, the EOS rule, frame budgets. This runtime maps its calls
onto FluidAudio's models, as FluidAudio's Swift code drives them:

* ``start_sequence``: zeroed 512-slot caches per layer (K/V pair rank-5 for
  ``gpu``, separate rank-4 K and V for ``ane``), the voice's keys and values
  copied into slots ``0..T-1``, every position counter at ``T``;
* ``prefill``: ``cond_prefill`` on blocks of at most 256 rows, zero-padded,
  with ``valid_len`` = real rows; caches and positions replaced by outputs;
* ``step``: ``flowlm_step`` on one latent; a NaN latent is BOS: the rank-5
  graph substitutes the ``bos_emb`` input itself, for ``ane`` the host passes
  the BOS latent (that graph has no NaN protocol);
* ``sample_latent``: ``flow_decoder_fused`` from the host's noise; its 8 LSD
  steps are baked in (see ``sample_latent``);
* ``decode``: ``mimi_decoder`` one latent at a time, threading its 24 state
  tensors (zeros, or ``constants_bin/mimi_init_state/<name>.bin``).

Output names are discovered once at load by FluidAudio's rules (see
``discovery.py``). All host arrays are float32; fp16 model I/O is converted
at the predictor boundary.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import pocketcli
from pocketcli.config import ModelConfig
from pocketcli.errors import BackendError, UserError
from pocketcli.errors import CoreMLUnavailable as CoreMLUnavailable  # defined there; re-exported
from pocketcli.packs.manifest import PackError
from pocketcli.runtimes.coreml import contract as c
from pocketcli.runtimes.coreml.constants import PackConstants
from pocketcli.runtimes.coreml.discovery import LayerKeys
from pocketcli.runtimes.coreml.encoder import VoiceEncoder, open_voice_encoder
from pocketcli.runtimes.coreml.models import open_pack_models
from pocketcli.runtimes.coreml.predictor import (
    Predictor,
    PredictorFactory,
    coreml_factory,
    coreml_unavailable_reason,
)
from pocketcli.runtimes.coreml.units import (
    DEFAULT_PLACEMENT,
    DEFAULT_PRECISION,
    DEFAULT_PRESET,
    canonical_placement,
    canonical_precision,
    stage_compute_units,
)
from pocketcli.voices.cloning import VoiceCloningUnavailable
from pocketcli.voices.state import VoiceState

CONFIGS_DIR = Path(pocketcli.__file__).parent / "data" / "configs"
log = logging.getLogger(__name__)


@dataclass
class CoreMLSequence:
    """One chunk's caches and position counters, keyed by the models' input names."""

    feeds: dict[str, np.ndarray]
    length: int = 0


@dataclass
class CoreMLDecoderState:
    feeds: dict[str, np.ndarray] = field(default_factory=dict)


def bundled_config(language: str) -> ModelConfig:
    """Kyutai's config for a FluidAudio language (pack directory name), shipped with us."""
    path = CONFIGS_DIR / f"{language}.yaml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in CONFIGS_DIR.glob("*.yaml")))
        raise PackError(
            f"no model config for a pack named {language!r}; pass one explicitly (known: {known})"
        )
    return ModelConfig.from_yaml(path)


class CoreMLRuntime:
    """Implements ``pocketcli.runtimes.base.Runtime`` over one FluidAudio pack.

    ``pack_dir`` is a ``v2.1/<lang>/`` directory; ``predictor_factory``
    defaults to Core ML (macOS only: elsewhere construction raises
    ``CoreMLUnavailable``); tests pass ``onnx_factory()`` to run ONNX twins.
    ``config`` defaults to the bundled Kyutai config named like the pack.
    """

    name = "coreml"
    tokenizer_kind = "sentencepiece"
    # flow_decoder_fused integrates a fixed number of steps; see sample_latent.
    decode_steps = c.FUSED_DECODER_STEPS

    def __init__(
        self,
        pack_dir: str | Path,
        precision: str = DEFAULT_PRECISION,
        placement: str = DEFAULT_PLACEMENT,
        compute_units: str = DEFAULT_PRESET,
        predictor_factory: PredictorFactory | None = None,
        *,
        config: ModelConfig | None = None,
    ) -> None:
        self.precision = canonical_precision(precision)
        self.placement = canonical_placement(placement)
        self.compute_units = stage_compute_units(compute_units, self.placement)
        if predictor_factory is None:
            reason = coreml_unavailable_reason()
            if reason is not None:
                raise CoreMLUnavailable(reason)
            predictor_factory = coreml_factory()
        self.pack_dir = Path(pack_dir)
        if not self.pack_dir.is_dir():
            raise PackError(f"CoreML pack not found: {self.pack_dir}")
        self.config: ModelConfig = config or bundled_config(self.pack_dir.name)
        self._dims = c.FlowDims.of(self.config)
        self.constants = PackConstants.read(self.pack_dir, self._dims.d_model, self._dims.latent)
        self._factory = predictor_factory
        self._models = open_pack_models(
            self.pack_dir,
            self.config,
            self.placement,
            self.precision,
            self.compute_units,
            predictor_factory,
        )
        self._encoder: VoiceEncoder | str | None = None

    # -- what callers may want to know ------------------------------------
    @property
    def tokenizer_path(self) -> Path:
        return self.constants.tokenizer_path

    @property
    def language(self) -> str:
        """The pack's FluidAudio language (its directory name) when we know it, else english."""
        name = self.pack_dir.name
        from pocketcli.options import DEFAULT_LANGUAGE

        return name if (CONFIGS_DIR / f"{name}.yaml").is_file() else DEFAULT_LANGUAGE

    @property
    def max_positions(self) -> int:
        """KV cache slots: voice + text + frames of one chunk must fit (512 in the packs)."""
        return self._models.slots

    def load_voice(self, name: str) -> VoiceState:
        """A voice shipped in the pack: ``constants_bin/<name>.safetensors``."""
        return self.constants.load_voice(
            name,
            self._dims.layers,
            self._dims.kv_heads,
            self._dims.head_dim,
            self.max_positions - 1,
        )

    # -- FlowLM ---------------------------------------------------------
    def embed_text(self, token_ids: np.ndarray) -> np.ndarray:
        """Rows of ``text_embed_table``; ids outside it are clamped, as FluidAudio does."""
        table = self.constants.text_embed_table
        ids = np.asarray(token_ids, np.int64).reshape(-1)
        if ids.size and (ids.min() < 0 or ids.max() >= table.shape[0]):
            log.warning("token ids outside the %d-row embedding table were clamped", table.shape[0])
        return table[np.clip(ids, 0, table.shape[0] - 1)]

    def start_sequence(self, voice: VoiceState | None, extra_capacity: int) -> CoreMLSequence:
        used = voice.length if voice is not None else 0
        if used + extra_capacity > self.max_positions:
            raise UserError(
                f"a chunk needs {used + extra_capacity} FlowLM positions (voice {used}, text and"
                f" frames {extra_capacity}) but the CoreML models hold {self.max_positions};"
                " use shorter chunks (fewer max tokens) or a shorter voice"
            )
        d = self._dims
        if voice is not None:
            voice.check_fits(d.layers, d.kv_heads, d.head_dim)
        feeds: dict[str, np.ndarray] = {}
        for i in range(d.layers):
            if self._models.split_caches:
                keys = np.zeros(d.cache(self.max_positions, True), np.float32)
                values = np.zeros_like(keys)
                if voice is not None:
                    keys[0, :used], values[0, :used] = voice.keys[i], voice.values[i]
                feeds[f"k_cache{i}"], feeds[f"v_cache{i}"] = keys, values
            else:
                cache = np.zeros(d.cache(self.max_positions, False), np.float32)
                if voice is not None:
                    cache[0, 0, :used], cache[1, 0, :used] = voice.keys[i], voice.values[i]
                feeds[f"cache{i}"] = cache
            feeds[f"position{i}"] = np.array([used], np.float32)
        return CoreMLSequence(feeds, used)

    def prefill(self, seq: CoreMLSequence, embeddings: np.ndarray) -> None:
        """``cond_prefill`` over blocks of at most 256 rows (voice, or a chunk's text)."""
        rows = np.asarray(embeddings, np.float32).reshape(-1, self._dims.d_model)
        block = self._models.rows
        model = self._models.conditioner
        for start in range(0, rows.shape[0], block):
            part = rows[start : start + block]
            padded = np.zeros((1, block, self._dims.d_model), np.float32)
            padded[0, : part.shape[0]] = part
            outs = model.predict(
                {
                    "conditioning": padded,
                    "valid_len": np.array([part.shape[0]], np.float32),
                    **seq.feeds,
                }
            )
            self._take_caches(model, seq, outs, self._models.cond_keys, part.shape[0])

    def step(self, seq: CoreMLSequence, latent: np.ndarray) -> tuple[np.ndarray, float]:
        """``flowlm_step`` on one latent (NaN = BOS) -> (hidden state, EOS logit)."""
        lat = np.asarray(latent, np.float32).reshape(1, 1, self._dims.latent)
        feeds = dict(seq.feeds)
        if self._models.split_caches:
            lat = np.where(np.isnan(lat), self.constants.bos_emb, lat).astype(np.float32)
        else:
            feeds["bos_emb"] = self.constants.bos_emb
        model = self._models.flowlm
        outs = model.predict({"sequence": lat, **feeds})
        keys = self._models.flowlm_keys
        self._take_caches(model, seq, outs, keys, 1)
        assert keys.hidden is not None and keys.eos is not None
        z = np.asarray(outs[keys.hidden], np.float32).reshape(-1)
        return z, float(np.asarray(outs[keys.eos]).reshape(-1)[0])

    def prefill_then_step(
        self, seq: CoreMLSequence, embeddings: np.ndarray, latent: np.ndarray
    ) -> tuple[np.ndarray, float]:
        """Two predictions: FluidAudio's conditioner and step are separate models."""
        self.prefill(seq, embeddings)
        return self.step(seq, latent)

    def _take_caches(
        self,
        model: Predictor,
        seq: CoreMLSequence,
        outs: dict[str, np.ndarray],
        keys: LayerKeys,
        added: int,
    ) -> None:
        """Replaces caches and positions with a model's outputs, checking the counters."""
        seq.length += added
        for i, (cache, position) in enumerate(zip(keys.caches, keys.positions, strict=True)):
            if self._models.split_caches:
                seq.feeds[f"k_cache{i}"] = np.asarray(outs[cache], np.float32)
                seq.feeds[f"v_cache{i}"] = np.asarray(outs[f"new_v_cache{i}"], np.float32)
            else:
                seq.feeds[f"cache{i}"] = np.asarray(outs[cache], np.float32)
            pos = np.asarray(outs[position], np.float32).reshape(1)
            if pos[0] != seq.length:
                raise BackendError(
                    f"{model.label}: layer {i} position is {pos[0]:g} after"
                    f" {seq.length} positions (outputs mis-assigned?)"
                )
            seq.feeds[f"position{i}"] = pos

    def sample_latent(self, z: np.ndarray, noise: np.ndarray, decode_steps: int) -> np.ndarray:
        """``flow_decoder_fused(z, noise)``: 8 baked LSD steps, whatever ``decode_steps`` says.

        FluidAudio computes ``x <- x + v(z, s=i/8, t=(i+1)/8, x) / 8`` for
        i = 0..7 from ``x = noise`` (the host's ``N(0, temperature)`` draw):
        pocket-tts's ``lsd_decode`` with 8 steps. The step count is part of the
        converted model, so ``decode_steps`` cannot change it here.
        """
        out = self._models.flow_decoder.predict(
            {
                "transformer_out": np.asarray(z, np.float32).reshape(1, self._dims.cond_dim),
                "latent_init": np.asarray(noise, np.float32).reshape(1, self._dims.latent),
            }
        )
        return np.asarray(out[self._models.flow_output], np.float32).reshape(self._dims.latent)

    def voice_state(self, seq: CoreMLSequence) -> VoiceState:
        n = seq.length
        if n > self.max_positions:
            raise UserError(f"the voice fills {n} positions, more than {self.max_positions}")
        d = self._dims
        keys, values = [], []
        for i in range(d.layers):
            if self._models.split_caches:
                k, v = seq.feeds[f"k_cache{i}"][0], seq.feeds[f"v_cache{i}"][0]
            else:
                k, v = seq.feeds[f"cache{i}"][0, 0], seq.feeds[f"cache{i}"][1, 0]
            keys.append(np.ascontiguousarray(k[:n]))
            values.append(np.ascontiguousarray(v[:n]))
        return VoiceState(tuple(keys), tuple(values))

    # -- voice cloning ----------------------------------------------------
    def _voice_encoder(self) -> VoiceEncoder | str:
        if self._encoder is None:
            unit = self.compute_units["mimi_encoder"]
            self._encoder = open_voice_encoder(
                self.pack_dir,
                lambda directory, name: self._factory(directory, name, unit),
                self._dims.d_model,
                self._dims.latent,
                self.config.mimi.samples_per_frame,
                self.constants.speaker_proj,
            )
        return self._encoder

    @property
    def cloning_unavailable_reason(self) -> str | None:
        if self.config.flow_lm.insert_bos_before_voice and self.constants.bos_before_voice is None:
            return "constants_bin/bos_before_voice.bin is missing"
        encoder = self._voice_encoder()
        return encoder if isinstance(encoder, str) else None

    @property
    def bos_before_voice(self) -> np.ndarray | None:
        """Prefilled before cloned conditioning whenever the pack ships it (as FluidAudio)."""
        if self.constants.bos_before_voice is None and self.config.flow_lm.insert_bos_before_voice:
            raise PackError(f"{self.constants.directory}: bos_before_voice.bin is missing")
        return self.constants.bos_before_voice

    def encode_voice(self, audio_24k: np.ndarray) -> np.ndarray:
        """The first 10 s of the prompt -> conditioning ``[frames <= 125, d_model]``."""
        encoder = self._voice_encoder()
        if isinstance(encoder, str):
            raise VoiceCloningUnavailable(f"this CoreML pack cannot clone voices: {encoder}")
        return encoder.encode(audio_24k)

    # -- Mimi -------------------------------------------------------------
    def start_decoder(self) -> CoreMLDecoderState:
        return CoreMLDecoderState(
            {
                name: self.constants.mimi_initial_state(name, shape)
                for name, shape in self._models.mimi_states.items()
            }
        )

    def decode(self, state: CoreMLDecoderState, latents: np.ndarray) -> np.ndarray:
        """Normalised latents ``[K, latent]`` -> audio, one ``mimi_decoder`` call per latent."""
        keys = self._models.mimi_keys
        frames = []
        for row in np.asarray(latents, np.float32).reshape(-1, self._dims.latent):
            outs = self._models.mimi.predict({c.MIMI_LATENT_INPUT: row[None], **state.feeds})
            for name, out in keys.states.items():
                state.feeds[name] = np.asarray(outs[out], np.float32)
            frames.append(np.asarray(outs[keys.audio], np.float32).reshape(-1))
        if not frames:
            return np.zeros(0, np.float32)
        return np.concatenate(frames)
