"""Test oracle: Kyutai's own ``pocket_tts`` package running on seeded random weights.

Hugging Face is unreachable from the test machines, so the released checkpoints cannot be
used. Instead this module builds the package's ``TTSModel`` from a config with no weights,
fills every tensor with seeded random values and records what the package computes, so the
torch-free reimplementation can be compared with it number for number.

Typical use::

    cfg = make_config("tiny", str(TOKENIZER_MODEL))
    ref = build_reference(cfg, weight_seed=0, out_dir=tmp_path)
    voice = ref.voice_state_from_audio(synthetic_voice_audio(), 24000)
    run = ref.generate("Hello world.", voice, temperature=0.0, seed=1, eos_threshold=1e9)

``ref.checkpoint_path`` is a ``model.safetensors`` in the released layout (the keys of
``TTSModel.state_dict()``) and ``ref.config_path`` a YAML the package's own
``TTSModel.load_model(config=...)`` accepts (it points ``weights_path`` at that file).

EOS with random weights: the EOS logits of a random model sit well above the default
threshold (-4.0), so with package semantics EOS fires on the first frame where it is allowed
(frame 6) and a chunk ends after ``6 + frames_after_eos`` emitted frames. Pass a huge
threshold (``eos_threshold=1e9``) to :meth:`Reference.generate` to disable EOS and get
max-length chunks of ``ceil((n_tokens / 3 + 2) * 12.5)`` frames.

Tokenizer: use :data:`TOKENIZER_MODEL` (Kyutai's SentencePiece model) for faithful English
ids. The ``tokenizer.json`` in tests/data is a third-party export whose post-processor adds
``<s>`` (id 1) and whose Metaspace never prepends ``▁``: through the package's
``JsonTokenizer`` it gives ``"Hello world."`` -> ``[1, 1356, 516, 589, 578, 263]`` instead of
SentencePiece's ``[2994, 578, 263]``. It is fine for checking that a config validates.

Needs torch and pocket-tts (the ``test`` extra); import it only from tests that have checked
both are installed.
"""

from __future__ import annotations

import copy
import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import safetensors.torch
import torch
import yaml
from pocket_tts.data.audio_utils import convert_audio
from pocket_tts.default_parameters import DEFAULT_SAMPLER_DECODE_STEPS
from pocket_tts.models.model_state import export_model_state
from pocket_tts.models.tts_model import TTSModel
from pocket_tts.modules.layer_scale import LayerScale
from pocket_tts.modules.mlp import LayerNorm as FlowLayerNorm
from pocket_tts.modules.mlp import RMSNorm
from pocket_tts.modules.stateful_module import init_states
from pocket_tts.utils.config import CONFIGS_DIR, Config
from torch import nn

from tests.support.paths import DATA

__all__ = [
    "TOKENIZER_DIR",
    "TOKENIZER_JSON",
    "TOKENIZER_MODEL",
    "VARIANTS",
    "Reference",
    "ReferenceChunk",
    "ReferenceRun",
    "build_reference",
    "make_config",
    "max_frames_for_tokens",
    "randomize_constant_tensors",
    "synthetic_voice_audio",
]

TOKENIZER_DIR = DATA / "tokenizer-en"
TOKENIZER_JSON = TOKENIZER_DIR / "tokenizer.json"
TOKENIZER_MODEL = TOKENIZER_DIR / "tokenizer.model"

# Small variants of the English config (see make_config).
VARIANTS = ("tiny", "narrow")

# TTSModel's frame-count estimate (TTSModel._TOKENS_PER_SECOND_ESTIMATE etc.).
_TOKENS_PER_SECOND = 3.0
_PADDING_SECONDS = 2.0


# --------------------------------------------------------------------------- configs


def _drop_weight_paths(node: Any) -> None:
    """Remove every ``weights_path*`` key, at any depth, in place."""
    if isinstance(node, dict):
        for key in [k for k in node if isinstance(k, str) and k.startswith("weights_path")]:
            del node[key]
        for value in node.values():
            _drop_weight_paths(value)
    elif isinstance(node, list):
        for value in node:
            _drop_weight_paths(value)


def _read_yaml(path: Path) -> dict[str, Any]:
    with open(path, encoding="utf-8") as f:
        data = yaml.safe_load(f)
    if not isinstance(data, dict):
        raise ValueError(f"{path} is not a YAML mapping")
    return data


def _small_mimi(mimi: dict[str, Any], *, layers: int, n_filters: int) -> None:
    """Shrink the Mimi codec in place, keeping 32-d latents and 1920 samples per frame."""
    width = 64
    mimi["seanet"]["n_filters"] = n_filters
    mimi["seanet"]["dimension"] = width
    mimi["transformer"].update(
        d_model=width,
        num_heads=4,
        num_layers=layers,
        dim_feedforward=128,
        input_dimension=width,
        output_dimensions=[width],
    )
    mimi["quantizer"]["output_dimension"] = width
    mimi["outer_dim"] = width
    mimi["inner_dim"] = 32
    mimi.pop("decoder_seanet", None)
    mimi.pop("decoder_transformer", None)


def _variant(name: str) -> dict[str, Any]:
    config = _read_yaml(CONFIGS_DIR / "english.yaml")
    flow_lm = config["flow_lm"]
    if name == "tiny":
        flow_lm["transformer"].update(num_layers=2, d_model=64, num_heads=4)
        flow_lm["lookup_table"]["dim"] = 64
        flow_lm["flow"].update(dim=64, depth=2)
        _small_mimi(config["mimi"], layers=1, n_filters=8)
    elif name == "narrow":
        flow_lm["transformer"].update(
            num_layers=3, d_model=96, num_heads=6, hidden_scale=2, num_kv_heads=3
        )
        flow_lm["lookup_table"]["dim"] = 96
        flow_lm["flow"].update(dim=48, depth=3)
        _small_mimi(config["mimi"], layers=2, n_filters=4)
    else:  # pragma: no cover - guarded by the caller
        raise ValueError(name)
    return config


def make_config(name: str, tokenizer_path: str) -> dict[str, Any]:
    """An offline config dict for ``name``, validated by ``pocket_tts``'s ``Config``.

    ``name`` is one of :data:`VARIANTS`, a packaged config name (``"english"``,
    ``"english_2026-09_24l"``, ``"english_2m_2026-10"``, ...) or a path to a YAML file.

    Variants (both derived from the packaged ``english`` config, 32-d latents, 4000-token
    vocabulary, 24 kHz, 1920 samples per frame):

    * ``tiny``: FlowLM 2 layers, d_model 64, 4 heads, FFN 256; flow head 64 wide, 2 blocks;
      Mimi 64-d SEANet with 8 filters and a 1-layer transformer (64-d, 4 heads, FFN 128).
    * ``narrow``: FlowLM 3 layers, d_model 96, 6 query heads of 16 sharing 3 KV heads
      (grouped-query attention), FFN 192; flow head 48 wide, 3 blocks; Mimi as ``tiny``
      with 4 filters and 2 transformer layers.

    All ``weights_path*`` keys are removed. The tokenizer is ``tokenizer_path``, read with
    ``tokenizers`` for a ``.json`` file and ``sentencepiece`` for a ``.model`` file.
    """
    if name in VARIANTS:
        config = _variant(name)
    elif (CONFIGS_DIR / f"{name}.yaml").is_file():
        config = _read_yaml(CONFIGS_DIR / f"{name}.yaml")
    elif name.endswith((".yaml", ".yml")) and Path(name).is_file():
        config = _read_yaml(Path(name))
    else:
        packaged = sorted(p.stem for p in CONFIGS_DIR.glob("*.yaml"))
        raise ValueError(f"unknown config {name!r}; use one of {VARIANTS} or {packaged}")

    _drop_weight_paths(config)

    suffix = Path(tokenizer_path).suffix
    if suffix == ".json":
        kind = "tokenizers"
    elif suffix == ".model":
        kind = "sentencepiece"
    else:
        raise ValueError(f"tokenizer must be a .json or .model file, got {tokenizer_path!r}")
    lookup = config["flow_lm"]["lookup_table"]
    lookup["tokenizer_path"] = str(tokenizer_path)
    lookup["tokenizer"] = kind

    Config(**config)  # fail early, with pydantic's message, on an invalid dict
    return config


def max_frames_for_tokens(n_tokens: int, frame_rate: float = 12.5) -> int:
    """The package's per-chunk frame ceiling: ``ceil((n_tokens / 3 + 2) * frame_rate)``."""
    return math.ceil((n_tokens / _TOKENS_PER_SECOND + _PADDING_SECONDS) * frame_rate)


# --------------------------------------------------------------------------- weights


def _normal(shape: torch.Size, gen: torch.Generator) -> torch.Tensor:
    return torch.randn(shape, generator=gen, dtype=torch.float32)


def _uniform(shape: torch.Size, low: float, high: float, gen: torch.Generator) -> torch.Tensor:
    return low + (high - low) * torch.rand(shape, generator=gen, dtype=torch.float32)


def _is_constant(t: torch.Tensor) -> bool:
    return t.numel() > 1 and bool((t == t.reshape(-1)[0]).all())


@torch.no_grad()
def randomize_constant_tensors(model: TTSModel, seed: int) -> list[str]:
    """Replace every constant-initialised tensor of ``model`` with seeded random values.

    Linear/conv/embedding weights and biases are already random after construction; the
    tensors below are built as constants, so a reimplementation that skipped them or read
    the wrong one would still match. After this, each of them changes the output:

    * LayerNorm gains/biases (FlowLM and Mimi transformers, flow-head ``in_ln``):
      ``1 + 0.1 N`` / ``0.1 N``; flow-head RMSNorm ``alpha``: ``1 + 0.1 N``;
    * LayerScale (Mimi transformers, init 0.01): ``10 * init * U(0.5, 1.5)``;
    * ``flow_lm.speaker_proj_weight`` (zeros): ``N(0, 1 / in_features)``;
    * ``flow_lm.emb_std`` (ones): ``U(0.5, 1.5)``; ``flow_lm.emb_mean`` (zeros): ``N(0, 0.1^2)``;
    * any other constant tensor left (none in 4.0.1): ones -> ``1 + 0.1 N``, else ``c + 0.1 N``.

    ``bos_emb`` and ``bos_before_voice`` are already ``N(0, 1)``. Returns the state-dict
    names that were changed.
    """
    gen = torch.Generator().manual_seed(seed)
    changed: list[str] = []

    def assign(name: str, tensor: torch.Tensor, value: torch.Tensor) -> None:
        tensor.copy_(value.to(tensor.dtype))
        changed.append(name)

    for mod_name, module in model.named_modules():
        prefix = f"{mod_name}." if mod_name else ""
        if isinstance(module, nn.LayerNorm | FlowLayerNorm):
            weight = getattr(module, "weight", None)
            bias = getattr(module, "bias", None)
            if isinstance(weight, torch.Tensor):
                assign(prefix + "weight", weight, 1.0 + 0.1 * _normal(weight.shape, gen))
            if isinstance(bias, torch.Tensor):
                assign(prefix + "bias", bias, 0.1 * _normal(bias.shape, gen))
        elif isinstance(module, RMSNorm):
            alpha = module.alpha
            assign(prefix + "alpha", alpha, 1.0 + 0.1 * _normal(alpha.shape, gen))
        elif isinstance(module, LayerScale):
            scale = module.scale
            init = float(scale.reshape(-1)[0].abs())
            assign(prefix + "scale", scale, 10.0 * init * _uniform(scale.shape, 0.5, 1.5, gen))

    flow_lm = model.flow_lm
    proj = flow_lm.speaker_proj_weight
    assign(
        "flow_lm.speaker_proj_weight",
        proj,
        _normal(proj.shape, gen) / math.sqrt(proj.shape[1]),
    )
    assign("flow_lm.emb_std", flow_lm.emb_std, _uniform(flow_lm.emb_std.shape, 0.5, 1.5, gen))
    assign("flow_lm.emb_mean", flow_lm.emb_mean, 0.1 * _normal(flow_lm.emb_mean.shape, gen))

    # Anything the package may add later and initialise to a constant.
    params = dict(model.named_parameters())
    params.update(dict(model.named_buffers()))
    for name, tensor in params.items():
        if _is_constant(tensor):
            base = float(tensor.reshape(-1)[0])
            assign(name, tensor, base + 0.1 * _normal(tensor.shape, gen))
    return changed


# --------------------------------------------------------------------------- voice audio


def synthetic_voice_audio(
    seconds: float = 2.0, sample_rate: int = 24000, seed: int = 0
) -> np.ndarray:
    """A deterministic voice-like prompt: float32 mono samples in about [-0.5, 0.5].

    A harmonic series (f0 around 110-170 Hz with a slow glide and vibrato, 1/k amplitudes)
    under a syllable-rate amplitude envelope that never drops more than ~12 dB below its
    peak, plus a little seeded noise; 10 ms fades at both ends. ``end_on_pause`` therefore
    keeps all but the last ~20 ms.
    """
    rng = np.random.default_rng(seed)
    n = int(round(seconds * sample_rate))
    t = np.arange(n, dtype=np.float64) / sample_rate
    base = 110.0 + 60.0 * rng.random()
    f0 = (
        base
        * (1.0 + 0.15 * np.sin(2 * np.pi * 0.4 * t))
        * (1.0 + 0.01 * np.sin(2 * np.pi * 5.5 * t))
    )
    phase = 2 * np.pi * np.cumsum(f0) / sample_rate
    signal = np.zeros(n)
    for k in range(1, 13):
        signal += np.sin(k * phase + rng.uniform(0, 2 * np.pi)) / k
    syllables = 0.625 + 0.375 * np.sin(2 * np.pi * 3.7 * t + rng.uniform(0, 2 * np.pi))
    signal *= syllables
    signal += 0.02 * rng.standard_normal(n)
    signal *= 0.35 / max(float(np.max(np.abs(signal))), 1e-9)
    fade = min(int(0.01 * sample_rate), n // 2)
    if fade > 0:
        ramp = np.linspace(0.0, 1.0, fade)
        signal[:fade] *= ramp
        signal[n - fade :] *= ramp[::-1]
    return signal.astype(np.float32)


# --------------------------------------------------------------------------- records


@dataclass
class ReferenceChunk:
    """What the package computed for one text chunk.

    ``n_steps`` (the first axis) counts every frame-step FlowLM call, including the last
    one after EOS whose latent is computed but dropped; ``emitted_frames`` is the number of
    latents actually decoded by Mimi (``n_steps - 1`` after EOS, ``n_steps`` at the
    max-length ceiling). Latents are in the FlowLM's normalized space (Mimi receives
    ``latent * emb_std + emb_mean``).
    """

    token_ids: list[int]
    frame_noise: np.ndarray  # [n_steps, ldim] x0 drawn in each frame step
    eos_logits: np.ndarray  # [n_steps] raw out_eos output, before the threshold
    latents: np.ndarray  # [n_steps, ldim]
    emitted_frames: int

    @property
    def n_steps(self) -> int:
        return int(self.eos_logits.shape[0])


@dataclass
class ReferenceRun:
    audio: np.ndarray  # float32 [samples]
    chunks: list[ReferenceChunk]


@dataclass
class _Call:
    """One FlowLM forward call seen by the hooks."""

    prefill: bool
    tokens: list[int] | None = None
    noise: torch.Tensor | None = None
    eos_logit: float | None = None
    latent: torch.Tensor | None = None


@dataclass
class _Recorder:
    """Collects FlowLM calls and Mimi decoder inputs from the package's threads.

    The package runs the text prefill on the caller's thread, the frame loop on a
    generation thread and Mimi on a decoder thread. FlowLM calls never overlap (a chunk's
    generation thread ends before the next chunk's prefill), so "the current call" is
    well defined; the lock only guards the lists against the concurrent decoder thread.
    """

    lock: threading.Lock = field(default_factory=threading.Lock)
    calls: list[_Call] = field(default_factory=list)
    pending_tokens: list[int] | None = None
    current: _Call | None = None
    # (chunk index, decoder input [T, ldim]) per Mimi call
    decoded: list[tuple[int, torch.Tensor]] = field(default_factory=list)
    n_prefills: int = 0

    def on_conditioner(self, _module: nn.Module, args: tuple[Any, ...]) -> None:
        tokens = args[0]
        if tokens.numel() > 0:
            with self.lock:
                self.pending_tokens = [int(x) for x in tokens.reshape(-1).tolist()]

    def on_flow_lm_start(
        self, _module: nn.Module, _args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> None:
        sequence = kwargs["sequence"]
        call = _Call(prefill=sequence.shape[1] == 0)
        with self.lock:
            if call.prefill:
                call.tokens = self.pending_tokens
                self.pending_tokens = None
                self.n_prefills += 1
            self.current = call
            self.calls.append(call)

    def on_flow_net(self, _module: nn.Module, args: tuple[Any, ...]) -> None:
        call = self.current
        if call is not None and call.noise is None:
            # The first flow-net call of a FlowLM step gets x0 itself as its last argument.
            call.noise = args[-1].detach().reshape(-1).clone()

    def on_out_eos(self, _module: nn.Module, _args: tuple[Any, ...], output: torch.Tensor) -> None:
        call = self.current
        if call is not None:
            call.eos_logit = float(output.reshape(-1)[0])

    def on_flow_lm_end(
        self,
        _module: nn.Module,
        _args: tuple[Any, ...],
        _kwargs: dict[str, Any],
        output: tuple[torch.Tensor, torch.Tensor],
    ) -> None:
        call = self.current
        if call is not None:
            call.latent = output[0].detach().reshape(-1).clone()
        self.current = None

    def on_quantizer(self, _module: nn.Module, args: tuple[Any, ...]) -> None:
        latent = args[0]  # [1, ldim, T] (denormalized latents, channels first)
        with self.lock:
            self.decoded.append((self.n_prefills - 1, latent[0].detach().T.clone()))


# --------------------------------------------------------------------------- reference


class Reference:
    """A ``pocket_tts`` ``TTSModel`` with random weights saved in the released layout.

    Attributes: ``model`` (the ``TTSModel``), ``config`` (the weight-free config dict),
    ``checkpoint_path`` (``model.safetensors``), ``config_path`` (``config.yaml`` for
    ``TTSModel.load_model(config=...)``), ``sample_rate`` and ``samples_per_frame``.
    """

    def __init__(
        self,
        model: TTSModel,
        config: dict[str, Any],
        checkpoint_path: Path,
        config_path: Path,
    ) -> None:
        self.model = model
        self.config = config
        self.checkpoint_path = checkpoint_path
        self.config_path = config_path
        self._lock = threading.Lock()

    @classmethod
    def load(cls, config_path: Path) -> Reference:
        """Reload a saved reference through the package's own loader (strict)."""
        config_path = Path(config_path)
        full = _read_yaml(config_path)
        model = TTSModel.load_model(config=config_path)
        checkpoint = Path(full.pop("weights_path"))
        return cls(model, full, checkpoint, config_path)

    def saved_as(self, dtype: str, out_dir: Path) -> Reference:
        """This model's weights written as ``dtype`` safetensors and reloaded by the package.

        ``dtype``: ``"bf16"`` (every tensor BF16, like Kyutai's released checkpoints) or
        ``"fp16-mixed"`` (matrices F16, vectors F32). The file is loaded back through the
        package's own ``TTSModel.load_model(config=...)`` (``load_state_dict`` upcasts to
        float32), so the returned reference runs exactly the weights in the file.
        """
        if dtype not in _SAVE_DTYPES:
            raise ValueError(f"dtype must be one of {sorted(_SAVE_DTYPES)}, got {dtype!r}")
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        checkpoint = out_dir / "model.safetensors"
        tensors = {
            name: tensor.detach().to("cpu").to(_SAVE_DTYPES[dtype](tensor)).contiguous().clone()
            for name, tensor in self.model.state_dict().items()
        }
        safetensors.torch.save_file(tensors, str(checkpoint))
        config_path = out_dir / "config.yaml"
        on_disk = copy.deepcopy(self.config)
        on_disk["weights_path"] = str(checkpoint.resolve())
        with open(config_path, "w", encoding="utf-8") as f:
            yaml.safe_dump(on_disk, f, sort_keys=False, allow_unicode=True)
        reloaded = Reference.load(config_path)
        reloaded.model.eval()
        return reloaded

    @torch.no_grad()
    def voice_state_from_conditioning(
        self, conditioning: np.ndarray
    ) -> dict[str, dict[str, torch.Tensor]]:
        """The package's state for a ``[frames, d_model]`` voice embedding (an
        ``audio_prompt``): ``bos_before_voice`` (when the model has it) and the frames
        prefilled by ``_run_flow_lm_and_increment_step(audio_conditioning=...)``, as
        ``get_state_for_audio_prompt`` does after encoding a recording."""
        cond = np.ascontiguousarray(conditioning, dtype=np.float32)
        prompt = torch.from_numpy(cond).reshape(1, cond.shape[-2], cond.shape[-1])
        flow_lm = self.model.flow_lm
        if flow_lm.insert_bos_before_voice:
            prompt = torch.cat([flow_lm.bos_before_voice, prompt], dim=1)
        state = init_states(flow_lm, batch_size=1, sequence_length=prompt.shape[1])
        self.model._run_flow_lm_and_increment_step(model_state=state, audio_conditioning=prompt)
        return state

    def build_pack(self, out_dir: Path, precisions: tuple[str, ...] = ("fp32",)) -> Path:
        """Our torch-free pack built from this reference's checkpoint (what users do)."""
        from pocketcli.config import ModelConfig
        from pocketcli.packs.builder import build_pack

        build_pack(
            self.checkpoint_path,
            ModelConfig.from_dict(self.config),
            TOKENIZER_MODEL,
            out_dir,
            precisions=precisions,
        )
        return Path(out_dir)

    @property
    def sample_rate(self) -> int:
        return int(self.model.sample_rate)

    @property
    def samples_per_frame(self) -> int:
        return int(self.model.mimi.frame_size)

    # ------------------------------------------------------------------ voice

    def voice_state_from_audio(
        self, audio: np.ndarray, sample_rate: int
    ) -> dict[str, dict[str, torch.Tensor]]:
        """The package's voice state for a mono prompt (any rate; resampled like a file)."""
        wav = torch.from_numpy(np.ascontiguousarray(audio, dtype=np.float32)).reshape(1, -1)
        if sample_rate != self.sample_rate:
            wav = convert_audio(wav, sample_rate, self.sample_rate, 1)
        return self.model.get_state_for_audio_prompt(wav)

    def export_voice(self, state: dict[str, dict[str, torch.Tensor]], path: Path) -> None:
        """Write ``state`` with the package's ``export_model_state`` (safetensors)."""
        export_model_state(state, path)

    # ------------------------------------------------------------------ generation

    @contextmanager
    def _instrumented(self, recorder: _Recorder) -> Iterator[None]:
        flow_lm = self.model.flow_lm
        handles = [
            flow_lm.conditioner.register_forward_pre_hook(recorder.on_conditioner),
            flow_lm.register_forward_pre_hook(recorder.on_flow_lm_start, with_kwargs=True),
            flow_lm.register_forward_hook(recorder.on_flow_lm_end, with_kwargs=True),
            flow_lm.flow_net.register_forward_pre_hook(recorder.on_flow_net),
            flow_lm.out_eos.register_forward_hook(recorder.on_out_eos),
            self.model.mimi.quantizer.register_forward_pre_hook(recorder.on_quantizer),
        ]
        try:
            yield
        finally:
            for handle in handles:
                handle.remove()

    @contextmanager
    def _settings(self, **values: Any) -> Iterator[None]:
        saved = {name: getattr(self.model, name) for name in values}
        try:
            for name, value in values.items():
                setattr(self.model, name, value)
            yield
        finally:
            for name, value in saved.items():
                setattr(self.model, name, value)

    def generate(
        self,
        text: str,
        voice_state: dict[str, dict[str, torch.Tensor]],
        *,
        temperature: float,
        seed: int,
        frames_after_eos: int | None = None,
        max_tokens: int = 50,
        eos_threshold: float | None = None,
        decode_steps: int = 1,
        noise_clamp: float | None = None,
    ) -> ReferenceRun:
        """Run the package's ``generate_audio`` and record every step.

        ``torch.manual_seed(seed)`` is called right before; ``copy_state=True`` leaves
        ``voice_state`` untouched. ``eos_threshold=None`` keeps the config's default
        (-4.0 for English: random weights then stop at frame 6 + ``frames_after_eos``);
        ``eos_threshold=1e9`` disables EOS (max-length chunks). ``frames_after_eos=None``
        uses the package's guess (3 or 5 frames by word count). Mimi decodes one frame per
        call so the audio is bit-stable whatever the thread timing.
        """
        if eos_threshold is None:
            eos_threshold = float(self.model.config.default_eos_threshold)
        recorder = _Recorder()
        settings = dict(
            temp=float(temperature),
            eos_threshold=float(eos_threshold),
            sampler_decode_steps=int(decode_steps),
            noise_clamp=noise_clamp,
            max_decoder_frames_per_call=1,
        )
        with self._lock, self._settings(**settings), self._instrumented(recorder):
            torch.manual_seed(seed)
            audio = self.model.generate_audio(
                voice_state,
                text,
                max_tokens=max_tokens,
                frames_after_eos=frames_after_eos,
                copy_state=True,
            )
        run = ReferenceRun(
            audio=audio.detach().cpu().numpy().astype(np.float32, copy=False),
            chunks=self._group(recorder),
        )
        emitted = sum(chunk.emitted_frames for chunk in run.chunks)
        if emitted * self.samples_per_frame != run.audio.shape[0]:
            raise AssertionError(
                f"{emitted} emitted frames x {self.samples_per_frame} samples"
                f" != {run.audio.shape[0]} audio samples"
            )
        return run

    def _group(self, recorder: _Recorder) -> list[ReferenceChunk]:
        per_chunk: list[tuple[list[int], list[_Call]]] = []
        for call in recorder.calls:
            if call.prefill:
                if call.tokens is None:
                    raise AssertionError("prefill call without text tokens")
                per_chunk.append((call.tokens, []))
            elif not per_chunk:
                raise AssertionError("frame step before any text prefill")
            else:
                per_chunk[-1][1].append(call)

        ldim = int(self.model.flow_lm.ldim)
        std = self.model.flow_lm.emb_std.detach()
        mean = self.model.flow_lm.emb_mean.detach()
        chunks: list[ReferenceChunk] = []
        for index, (tokens, steps) in enumerate(per_chunk):
            for step in steps:
                if step.noise is None or step.latent is None or step.eos_logit is None:
                    raise AssertionError("incomplete FlowLM step record")
            decoded = [lat for owner, lat in recorder.decoded if owner == index]
            fed = torch.cat(decoded, dim=0) if decoded else torch.empty(0, ldim)
            emitted = int(fed.shape[0])
            if not emitted <= len(steps) <= emitted + 1:
                raise AssertionError(f"chunk {index}: {len(steps)} steps but {emitted} decoded")
            latents = torch.stack([s.latent for s in steps]) if steps else torch.empty(0, ldim)
            expected = latents[:emitted] * std + mean
            if not torch.allclose(fed, expected, rtol=0.0, atol=1e-6):
                raise AssertionError(f"chunk {index}: Mimi did not decode the recorded latents")
            chunks.append(
                ReferenceChunk(
                    token_ids=list(tokens),
                    frame_noise=_stack(steps, "noise", ldim),
                    eos_logits=np.array([s.eos_logit for s in steps], dtype=np.float32),
                    latents=latents.numpy().astype(np.float32),
                    emitted_frames=emitted,
                )
            )
        return chunks


_SAVE_DTYPES = {
    "bf16": lambda _t: torch.bfloat16,
    "fp16-mixed": lambda t: torch.float16 if t.ndim >= 2 else torch.float32,
}


def _stack(steps: list[_Call], attr: str, width: int) -> np.ndarray:
    rows = [getattr(s, attr) for s in steps]
    if not rows:
        return np.zeros((0, width), dtype=np.float32)
    return torch.stack(rows).numpy().astype(np.float32)


# --------------------------------------------------------------------------- building


def _write_checkpoint(model: TTSModel, path: Path) -> None:
    tensors = {
        name: tensor.detach().to("cpu").contiguous().clone()
        for name, tensor in model.state_dict().items()
    }
    safetensors.torch.save_file(tensors, str(path))


def build_reference(config: dict[str, Any], weight_seed: int, out_dir: Path) -> Reference:
    """Build the package's model from ``config`` with random weights and save it.

    ``torch.manual_seed(weight_seed)`` seeds the package's own initialisation (the same
    seed and config give the same weights); :func:`randomize_constant_tensors` then
    replaces the constant-initialised tensors. Writes ``out_dir/model.safetensors``
    (exactly ``TTSModel.state_dict()``, the released layout) and ``out_dir/config.yaml``
    (``config`` plus ``weights_path`` pointing at the checkpoint, so that
    ``TTSModel.load_model(config=out_dir / "config.yaml")`` loads it strictly).
    """
    config = copy.deepcopy(config)
    parsed = Config(**config)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)

    torch.manual_seed(weight_seed)
    model = TTSModel._from_pydantic_config_with_weights(
        parsed,
        parsed.default_temperature,
        DEFAULT_SAMPLER_DECODE_STEPS,
        None,
        parsed.default_eos_threshold,
    )
    randomize_constant_tensors(model, seed=weight_seed + 1_000_003)
    model.eval()

    checkpoint_path = out_dir / "model.safetensors"
    _write_checkpoint(model, checkpoint_path)
    config_path = out_dir / "config.yaml"
    on_disk = copy.deepcopy(config)
    on_disk["weights_path"] = str(checkpoint_path.resolve())
    with open(config_path, "w", encoding="utf-8") as f:
        yaml.safe_dump(on_disk, f, sort_keys=False, allow_unicode=True)
    return Reference(model, config, checkpoint_path, config_path)
