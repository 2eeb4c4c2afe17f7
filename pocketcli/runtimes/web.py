"""Runs a browser pack (``pocket_tts.json`` + ``onnx/{text_embed,flow_lm,mimi_decoder}.onnx``).

The engine is pockettts's, as for our packs. The pack's ``flow_lm`` takes the
frame's noise in the call that gives its EOS logit (the flow head is inside), so
this runtime offers ``step_sampled`` (one call per frame; the engine peeks the
frame's noise before the EOS rule, see ``runtimes.base.SamplingRuntime``) and not
the plain ``step`` / ``sample_latent`` pair: the scheduler drives it through
``engine.rows.SampledCalls``.
Nothing in ``pocket_tts.json`` is trusted as a path; the graphs' inputs must be
the ones it describes, or loading stops with one line naming the file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnxruntime as ort

from pocketcli.config import ConfigError, ModelConfig
from pocketcli.config_bounds import whole
from pocketcli.errors import WebPackError as WebPackError  # defined there; re-exported
from pocketcli.packs.manifest import PackError, read_json_file
from pocketcli.packs.onnx_wire import gather_table_rows
from pocketcli.packs.state_spec import StateSpec
from pocketcli.packs.web_layout import (
    BOS_FILE,
    CONFIG_FILE,
    FLOW_LM,
    FORMAT,
    MIMI_DECODER,
    TEXT_EMBED,
    VOICE_FILE,
)
from pocketcli.runtimes.onnx import _session as onnx_session
from pocketcli.runtimes.onnx import decoder_threads, default_threads
from pocketcli.voices.cloning import LayoutReason, VoiceCloningUnavailable, unavailable_message
from pocketcli.voices.state import VoiceState

_NP = {"float32": np.float32, "int64": np.int64}


# The contract's activations are float32. ONNX Runtime's CPU provider fuses Mimi's
# DequantizeLinear + MatMul into MatMulNBits at accuracy level 4 by default, which
# quantises the activations to int8 on x86 and Arm (7.7e-4 off a float32 decode of one
# frame, tiny model, peak 0.25); level 1 keeps them float32, as ONNX Runtime Web's WASM
# backend computes them (6e-8 off).
_FLOAT_ACTIVATIONS = {"session.qdq_matmulnbits_accuracy_level": "1"}


def _session(path: Path, threads: int) -> ort.InferenceSession:
    if not path.is_file():
        raise WebPackError(
            f"browser pack {path.parent.parent} is incomplete: {path.name} is missing"
        )
    try:
        return onnx_session(path, threads, _FLOAT_ACTIVATIONS)
    except PackError as exc:
        raise WebPackError(f"{path}: {str(exc).strip().splitlines()[0]}") from None


def _table_rows(path: Path) -> int | None:
    """Rows of the table that ``token_ids`` index (Gather or GatherBlockQuantized), read
    from the file's protobuf fields (``import onnx`` would cost a second at every start)."""
    try:
        return gather_table_rows(path, "token_ids")
    except ValueError:  # ONNX Runtime has read the file: a reader's limit, not a bad pack
        return None


def read_pack_config(directory: Path) -> dict:
    where = directory / CONFIG_FILE
    missing = f"{directory} is not a browser pack (no {CONFIG_FILE})"
    meta = read_json_file(where, WebPackError, missing)
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise WebPackError(f"{where}: not a browser pack description (format {FORMAT!r})")
    return meta


def _read_floats(path: Path, shape: tuple[int, ...]) -> np.ndarray:
    try:
        data = np.fromfile(path, np.float32)
    except OSError as exc:
        raise WebPackError(f"cannot read {path}: {exc.strerror or exc}") from None
    if data.size != int(np.prod(shape)) or not np.isfinite(data).all():
        raise WebPackError(
            f"{path}: {data.size} floats, expected {int(np.prod(shape))} finite ones {list(shape)}"
        )
    return data.reshape(shape)


@dataclass
class WebSequence:
    """The KV cache (``past_key_i`` / ``past_value_i`` feeds) and the next frame's input."""

    feeds: dict[str, np.ndarray]
    length: int
    next_emb: np.ndarray | None = None  # input_linear of the last sampled latent


@dataclass
class WebDecoderState:
    feeds: dict[str, np.ndarray]


class WebRuntime:
    """Implements ``runtimes.base.SamplingRuntime`` (and the rest of ``Runtime`` but
    ``step`` / ``sample_latent``: its graph samples) over a browser pack."""

    name = "browser"

    def __init__(self, directory: str | Path, threads: int | None = None) -> None:
        self.pack_dir = directory = Path(directory)
        self.meta = meta = read_pack_config(directory)
        try:
            self.config = ModelConfig.from_dict(meta["config"])
            self.decode_steps = whole("decode_steps", meta.get("decode_steps", 1), 1, 64)
            tokenizer_name = str(meta.get("tokenizer_file", "tokenizer.json"))
            specs = [StateSpec.from_dict(s) for s in meta["mimi_state"]]  # bounded shapes
            states = [(s.name, s.shape, s.dtype) for s in specs]
        except (KeyError, TypeError, ValueError, ConfigError) as exc:
            raise WebPackError(f"{directory / CONFIG_FILE}: {exc}") from None
        if tokenizer_name not in ("tokenizer.json", "tokenizer.model"):
            raise WebPackError(
                f"{directory / CONFIG_FILE}: tokenizer_file {tokenizer_name!r} is not a pack file"
            )
        self.tokenizer_path = directory / tokenizer_name
        if not self.tokenizer_path.is_file():
            raise WebPackError(
                f"browser pack {directory} is incomplete: {tokenizer_name} is missing"
            )
        self.tokenizer_kind = "tokenizers" if tokenizer_name.endswith(".json") else "sentencepiece"
        mimi_threads = decoder_threads(threads)
        threads = threads or default_threads()
        self.threads = threads
        fl = self.config.flow_lm
        t = fl.transformer
        self._d, self._latent_dim = t.d_model, fl.latent_dim
        self._layers, self._kv_heads, self._head_dim = t.num_layers, t.kv_heads, t.head_dim
        self._embed = _session(directory / TEXT_EMBED, 1)
        self._flow = _session(directory / FLOW_LM, threads)
        self._mimi = _session(directory / MIMI_DECODER, mimi_threads)
        self._bos_emb = _read_floats(directory / BOS_FILE, (1, 1, self._d))
        self._states = states
        self._check_graphs(states)
        self._check_tokenizer()
        self._flow_outputs = [o.name for o in self._flow.get_outputs()]
        self._mimi_outputs = [o.name for o in self._mimi.get_outputs()]

    def _check_graphs(self, states: list[tuple[str, tuple[int, ...], str]]) -> None:
        want_flow = ["emb", "noise"] + [
            f"past_{kind}_{i}" for i in range(self._layers) for kind in ("key", "value")
        ]
        got = [i.name for i in self._flow.get_inputs()]
        if got != want_flow:
            raise WebPackError(
                f"{self.pack_dir / FLOW_LM}: inputs {got[:4]}... do not match"
                f" {CONFIG_FILE}'s {self._layers} layers"
            )
        width = self._flow.get_inputs()[0].shape[-1]
        if width != self._d:
            raise WebPackError(
                f"{self.pack_dir / FLOW_LM}: emb width {width}, {CONFIG_FILE} says {self._d}"
            )
        embed_in = [i.name for i in self._embed.get_inputs()]
        embed_out = [o.name for o in self._embed.get_outputs()]
        if embed_in != ["token_ids"] or embed_out[:1] != ["text_emb"]:
            raise WebPackError(
                f"{self.pack_dir / TEXT_EMBED}: inputs {embed_in[:4]} and outputs"
                f" {embed_out[:4]} are not token_ids -> text_emb"
            )
        got_mimi = {i.name: i.shape for i in self._mimi.get_inputs()}
        for name, shape, _ in states:
            if name not in got_mimi or list(got_mimi[name]) != list(shape):
                raise WebPackError(
                    f"{self.pack_dir / MIMI_DECODER}: state {name} {got_mimi.get(name)} does not"
                    f" match {CONFIG_FILE}'s {list(shape)}"
                )
        unlisted = sorted(set(got_mimi) - {"latent"} - {name for name, _, _ in states})
        mimi_out = {o.name for o in self._mimi.get_outputs()}
        missing_out = [f"{name}_out" for name, _, _ in states if f"{name}_out" not in mimi_out]
        problem = None
        if unlisted:
            problem = f"inputs {unlisted[:3]} are not in {CONFIG_FILE}'s mimi_state"
        elif missing_out:
            problem = f"outputs {missing_out[:3]} are missing"
        elif "latent" not in got_mimi or "pcm" not in mimi_out:
            problem = "it is not latent -> pcm"
        if problem:
            raise WebPackError(f"{self.pack_dir / MIMI_DECODER}: {problem}")

    def _check_tokenizer(self) -> None:
        """The text table must have a row for every piece of the tokenizer:
        GatherBlockQuantized gives zeros for an index past its table, silently."""
        from pocketcli.text.tokenizer import load_tokenizer

        rows = _table_rows(self.pack_dir / TEXT_EMBED)
        vocab = load_tokenizer(self.tokenizer_path, self.tokenizer_kind).vocab_size
        if rows is not None and vocab > rows:
            raise WebPackError(
                f"{self.tokenizer_path} has {vocab} pieces, more than the {rows} rows of"
                f" {TEXT_EMBED}'s table: another model's tokenizer?"
            )

    # -- FlowLM ---------------------------------------------------------
    def embed_text(self, token_ids: np.ndarray) -> np.ndarray:
        ids = np.asarray(token_ids, np.int64).reshape(1, -1)
        return self._embed.run(None, {"token_ids": ids})[0][0]

    def start_sequence(self, voice: VoiceState | None, extra_capacity: int) -> WebSequence:
        feeds: dict[str, np.ndarray] = {}
        for i in range(self._layers):
            if voice is None:
                empty = np.zeros((1, self._kv_heads, 0, self._head_dim), np.float32)
                feeds[f"past_key_{i}"] = feeds[f"past_value_{i}"] = empty
            else:
                feeds[f"past_key_{i}"] = np.ascontiguousarray(
                    voice.keys[i].transpose(1, 0, 2)[None]
                )
                feeds[f"past_value_{i}"] = np.ascontiguousarray(
                    voice.values[i].transpose(1, 0, 2)[None]
                )
        if voice is not None:
            voice.check_fits(self._layers, self._kv_heads, self._head_dim)
        return WebSequence(feeds, voice.length if voice is not None else 0)

    def _run(
        self, seq: WebSequence, emb: np.ndarray, noise: np.ndarray, past: dict[str, np.ndarray]
    ) -> tuple[np.ndarray, float, np.ndarray]:
        feeds = {"emb": emb, "noise": noise.reshape(1, self._latent_dim), **past}
        outs = self._flow.run(None, feeds)
        for name, value in zip(self._flow_outputs[3:], outs[3:], strict=True):
            seq.feeds[name.replace("present_", "past_")] = value
        seq.length = int(outs[3].shape[2])
        seq.next_emb = outs[2]
        return outs[0].reshape(self._latent_dim), float(outs[1].reshape(-1)[0]), outs[2]

    def _zero_noise(self) -> np.ndarray:
        return np.zeros((1, self._latent_dim), np.float32)

    def prefill(self, seq: WebSequence, embeddings: np.ndarray) -> None:
        emb = np.ascontiguousarray(embeddings, np.float32)[None]
        self._run(seq, emb, self._zero_noise(), dict(seq.feeds))
        seq.next_emb = None

    def _frame_input(self, seq: WebSequence, latent: np.ndarray) -> np.ndarray:
        """``bos_emb`` for the BOS latent (NaN), else the ``next_emb`` the graph gave with
        that latent (the graph holds ``input_linear``)."""
        if np.isnan(latent).any():
            return self._bos_emb
        if seq.next_emb is None:
            raise ValueError("a browser pack continues only from the latent it sampled last")
        return seq.next_emb

    def step_sampled(
        self, seq: WebSequence, latent: np.ndarray, noise: np.ndarray, decode_steps: int
    ) -> tuple[np.ndarray, float]:
        self._check_steps(decode_steps)
        emb = self._frame_input(seq, np.asarray(latent))
        sampled, eos, _ = self._run(seq, emb, np.asarray(noise, np.float32), dict(seq.feeds))
        return sampled, eos

    def prefill_then_step_sampled(
        self,
        seq: WebSequence,
        embeddings: np.ndarray,
        latent: np.ndarray,
        noise: np.ndarray,
        decode_steps: int,
    ) -> tuple[np.ndarray, float]:
        self.prefill(seq, embeddings)
        return self.step_sampled(seq, latent, noise, decode_steps)

    def _check_steps(self, decode_steps: int) -> None:
        if decode_steps != self.decode_steps:
            raise PackError(
                f"browser pack {self.pack_dir} samples with {self.decode_steps} decode step(s)"
                f" (its flow_lm holds the sampler); {decode_steps} asked for"
            )

    def voice_state(self, seq: WebSequence) -> VoiceState:
        keys = tuple(
            np.ascontiguousarray(seq.feeds[f"past_key_{i}"][0].transpose(1, 0, 2))
            for i in range(self._layers)
        )
        values = tuple(
            np.ascontiguousarray(seq.feeds[f"past_value_{i}"][0].transpose(1, 0, 2))
            for i in range(self._layers)
        )
        return VoiceState(keys, values)

    def pack_voice(self) -> np.ndarray:
        """``voice_alba.bin``'s rows (``bos_before_voice`` first, when the model has one)."""
        shape = self.meta.get("voices", {}).get("alba", {}).get("shape")
        if not (isinstance(shape, list) and len(shape) == 2 and shape[1] == self._d):
            raise WebPackError(
                f"{self.pack_dir / CONFIG_FILE}: voices.alba.shape is not [frames, {self._d}]"
            )
        return _read_floats(self.pack_dir / VOICE_FILE, (int(shape[0]), self._d))

    # -- voice cloning: a browser pack has no encoder ----------------------
    @property
    def cloning_unavailable_reason(self) -> str | None:
        return LayoutReason("a browser pack has no Mimi encoder")

    @property
    def bos_before_voice(self) -> np.ndarray | None:
        return None  # voice_alba.bin already starts with it

    def encode_voice(self, audio_24k: np.ndarray) -> np.ndarray:
        raise VoiceCloningUnavailable(unavailable_message(self.cloning_unavailable_reason or ""))

    # -- Mimi -------------------------------------------------------------
    def start_decoder(self) -> WebDecoderState:
        return WebDecoderState(
            {name: np.zeros(shape, _NP[dtype]) for name, shape, dtype in self._states}
        )

    def decode(self, state: WebDecoderState, latents: np.ndarray) -> np.ndarray:
        lat = np.asarray(latents, np.float32).reshape(-1, self._latent_dim)
        pieces = []
        for row in lat:  # the pack's decoder takes one frame per call
            outs = self._mimi.run(None, {"latent": row.reshape(1, 1, -1), **state.feeds})
            for name, value in zip(self._mimi_outputs[1:], outs[1:], strict=True):
                state.feeds[name.removesuffix("_out")] = value
            pieces.append(outs[0].reshape(-1))
        return np.concatenate(pieces)
