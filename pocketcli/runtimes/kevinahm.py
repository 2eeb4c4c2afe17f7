"""Runs a KevinAHM v2 bundle (``bundle.json`` + five graphs) through ONNX Runtime.

The engine (text, noise, EOS rule, chunking) is pockettts's, as for our packs;
this runtime only maps its calls onto the bundle's graphs: the FlowLM's whole
KV cache travels as ``state_<i>`` tensors named by ``flow_lm_state_manifest``,
the Mimi decoder's as ``mimi_decoder``'s per ``mimi_state_manifest``. Nothing
in ``bundle.json`` is trusted: file names must stay inside the folder, the
manifests must match the graphs' inputs and outputs, and the tokenizer and
the voice must fit the graphs' shapes, or loading stops with one line naming
the file and the problem.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort

from pocketcli.config import ConfigError, ModelConfig
from pocketcli.errors import BundleError as BundleError  # defined there; re-exported
from pocketcli.packs.kevinahm.metadata import (
    BUNDLE_FILE,
    DTYPES,
    FILLS,
    REQUIRED_GRAPHS,
    SCHEMA_VERSION,
    SIDECAR_FILE,
    SIDECAR_FORMAT,
    StateEntry,
    graph_file,
)
from pocketcli.packs.manifest import PackError, read_json_file
from pocketcli.runtimes.flow import integrate_flow
from pocketcli.runtimes.graph_roles import Role, check_role, role
from pocketcli.runtimes.onnx import _session as onnx_session
from pocketcli.runtimes.onnx import decoder_threads, default_threads
from pocketcli.voices.cloning import VoiceCloningUnavailable, unavailable_message
from pocketcli.voices.state import VoiceError, VoiceState

PRECISIONS = ("fp32", "int8")
# Graphs an int8 bundle still runs in fp32 (KevinAHM's runtime does the same: the
# table lookup has nothing to quantise, and the voice encoder runs once per voice).
_FP32_ALWAYS = ("text_conditioner", "mimi_encoder")
# A state of the largest published bundle holds 2,048,000 numbers (a 24-layer FlowLM's cache
# of one layer), all of them 49,152,024: entries past these are not a model's.
MAX_STATE_SIZE = 1 << 23
MAX_STATES_SIZE = 1 << 28
_NP = {"float32": np.float32, "int64": np.int64, "bool": np.bool_}
_ORT_TYPES = {"float32": "tensor(float)", "int64": "tensor(int64)", "bool": "tensor(bool)"}


def is_bundle(directory: Path) -> bool:
    return (Path(directory) / BUNDLE_FILE).is_file()


def _inside(directory: Path, name: Any, what: str) -> Path:
    """``directory / name`` for a plain file name that stays inside ``directory``."""
    where = directory / BUNDLE_FILE
    if not isinstance(name, str) or not name:
        raise BundleError(f"{where}: {what} must be a file name, not {name!r}")
    path = directory / name
    try:
        inside = path.resolve().is_relative_to(directory.resolve())
    except OSError:
        inside = False
    if Path(name).is_absolute() or ".." in Path(name).parts or not inside:
        raise BundleError(f"{where}: {what} {name!r} points outside the bundle folder")
    if not path.is_file():
        raise BundleError(f"bundle {directory} is incomplete: {name} ({what}) is missing")
    return path


def _manifest(directory: Path, d: dict, key: str) -> tuple[StateEntry, ...]:
    where = directory / BUNDLE_FILE
    raw = d.get(key)
    if not isinstance(raw, list) or not raw:
        raise BundleError(f"{where}: {key} is missing or empty")
    out = []
    for i, e in enumerate(raw):
        try:
            shape = tuple(e["shape"])
            entry = StateEntry(e["module"], e["key"], e["dtype"], shape, e["fill"], e["index"])
            ok = (
                entry.index == i
                and e["input_name"] == entry.input_name
                and e["output_name"] == entry.output_name
                and entry.dtype in DTYPES
                and entry.fill in FILLS
                and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape)
                and math.prod(shape) <= MAX_STATE_SIZE
            )
        except (KeyError, TypeError):
            ok = False
        if not ok:
            raise BundleError(f"{where}: {key} entry {i} is malformed")
        out.append(entry)
    if sum(math.prod(e.shape) for e in out) > MAX_STATES_SIZE:
        raise BundleError(f"{where}: {key}'s states hold more than {MAX_STATES_SIZE} numbers")
    return tuple(out)


def initial_state(entry: StateEntry) -> np.ndarray:
    dtype = _NP[entry.dtype]
    if entry.fill == "nan":
        return np.full(entry.shape, np.nan, dtype)
    if entry.fill == "ones":
        return np.ones(entry.shape, dtype)
    return np.zeros(entry.shape, dtype)


@dataclass(frozen=True)
class Bundle:
    """What ``bundle.json`` (checked) and the folder say."""

    directory: Path
    name: str
    language: str
    metadata: dict
    flow_states: tuple[StateEntry, ...]
    mimi_states: tuple[StateEntry, ...]
    tokenizer: Path
    bos_file: Path | None
    sidecar: dict

    @classmethod
    def read(cls, directory: str | Path) -> Bundle:
        directory = Path(directory)
        where = directory / BUNDLE_FILE
        if not directory.is_dir():
            raise BundleError(f"model folder not found: {directory}")
        missing = f"{directory} is not a KevinAHM bundle (no {BUNDLE_FILE})"
        d = read_json_file(where, BundleError, missing)
        if not isinstance(d, dict) or d.get("schema_version") != SCHEMA_VERSION:
            got = d.get("schema_version") if isinstance(d, dict) else None
            raise BundleError(f"{where}: schema_version is {got!r}; this pockettts reads 2")
        name = d.get("bundle_name")
        language = d.get("language", name)
        if not isinstance(name, str) or not isinstance(language, str):
            raise BundleError(f"{where}: bundle_name/language must be strings")
        tokenizer = _inside(directory, d.get("tokenizer_file"), "tokenizer_file")
        bos_name = d.get("bos_before_voice_file")
        bos = None if bos_name is None else _inside(directory, bos_name, "bos_before_voice_file")
        sidecar: dict = {}
        side = directory / SIDECAR_FILE
        if side.is_file():
            sidecar = read_json_file(side, BundleError)
            if not isinstance(sidecar, dict) or sidecar.get("format") != SIDECAR_FORMAT:
                raise BundleError(f"{side} is not a pockettts bundle description")
        return cls(
            directory,
            name,
            language,
            d,
            _manifest(directory, d, "flow_lm_state_manifest"),
            _manifest(directory, d, "mimi_state_manifest"),
            tokenizer,
            bos,
            sidecar,
        )

    def graph(self, graph: str, precision: str) -> Path | None:
        """The graph file for a precision (int8 bundles fall back to fp32 graphs)."""
        order = ["fp32"] if precision == "fp32" or graph in _FP32_ALWAYS else [precision, "fp32"]
        if graph in _FP32_ALWAYS and precision != "fp32":
            order.append(precision)
        for p in order:
            path = self.directory / graph_file(graph, p)
            if path.is_file():
                return path
        return None

    @property
    def precisions(self) -> tuple[str, ...]:
        return tuple(
            p for p in PRECISIONS if (self.directory / graph_file("flow_lm_main", p)).is_file()
        )

    @property
    def can_clone(self) -> bool:
        return (self.directory / graph_file("mimi_encoder", "fp32")).is_file() or (
            self.directory / graph_file("mimi_encoder", "int8")
        ).is_file()

    @property
    def tokenizer_kind(self) -> str:
        return "tokenizers" if self.tokenizer.suffix == ".json" else "sentencepiece"

    def config(self) -> ModelConfig:
        """Our config of the model: the sidecar's, else the released config of that
        name; the text flags are always bundle.json's."""
        where = self.directory / BUNDLE_FILE
        try:
            if self.sidecar:
                config = ModelConfig.from_dict(self.sidecar["config"])
            else:
                from pocketcli.store.catalog import catalog

                known = catalog().kyutai.get(self.language)
                if known is None:
                    raise BundleError(
                        f"{where}: pockettts has no config for model {self.language!r}"
                        f" and the folder has no {SIDECAR_FILE}"
                    )
                config = ModelConfig.from_yaml(known.config_path())
        except (KeyError, TypeError, ConfigError) as exc:
            raise BundleError(f"{self.directory / SIDECAR_FILE}: {exc}") from None
        text = dict(config.text)
        for key in (
            "remove_semicolons",
            "pad_with_spaces_for_short_inputs",
            "model_recommended_frames_after_eos",
        ):
            if key in self.metadata:
                text[key] = self.metadata[key]
        frames = text.get("model_recommended_frames_after_eos")
        if frames is not None and (
            isinstance(frames, bool) or not isinstance(frames, int) or frames < 0
        ):  # a negative count would cut the speech short of its end, unsaid
            raise BundleError(
                f"{where}: model_recommended_frames_after_eos must be a whole number"
                f" from 0 (or null), not {repr(frames)[:40]}"
            )
        for key in ("remove_semicolons", "pad_with_spaces_for_short_inputs"):
            if not isinstance(text.get(key, False), bool):
                raise BundleError(f"{where}: {key} must be true or false")
        config = dataclasses.replace(config, text=text)
        t = config.flow_lm.transformer
        caches = [e for e in self.flow_states if e.key == "cache"]
        if len(caches) != t.num_layers or any(
            len(e.shape) != 5 or e.shape[3:] != (t.kv_heads, t.head_dim) for e in caches
        ):
            raise BundleError(
                f"{where}: flow_lm_state_manifest has {len(caches)} attention caches;"
                f" model {self.language!r} has {t.num_layers} layers of"
                f" {t.kv_heads} x {t.head_dim}"
            )
        for key, want in (
            ("latent_dim", config.flow_lm.latent_dim),
            ("conditioning_dim", t.d_model),
            ("sample_rate", config.mimi.sample_rate),
            ("samples_per_frame", config.mimi.samples_per_frame),
        ):
            if self.metadata.get(key, want) != want:
                raise BundleError(
                    f"{where}: {key} is {self.metadata.get(key)!r}; model"
                    f" {self.language!r} has {want}"
                )
        return config


def _session(path: Path, threads: int) -> ort.InferenceSession:
    """Our packs' session settings; ONNX Runtime's reason in one line, with the path."""
    try:
        return onnx_session(path, threads)
    except PackError as exc:
        first = str(exc).strip().splitlines()[0]
        raise BundleError(f"{path.parent}: {first}") from None


def _check_states(
    session: ort.InferenceSession, path: Path, states: tuple[StateEntry, ...], n_in: int, n_out: int
) -> None:
    """The graph's state inputs and outputs are the manifest's, in order, with its types."""
    inputs, outputs = session.get_inputs()[n_in:], session.get_outputs()[n_out:]
    problem = None
    if len(inputs) != len(states) or len(outputs) != len(states):
        problem = f"the graph has {len(inputs)} state inputs, the manifest {len(states)} entries"
    else:
        for e, i, o in zip(states, inputs, outputs, strict=True):
            static = [d if isinstance(d, int) else None for d in i.shape]
            if i.name != e.input_name or o.name != e.output_name:
                problem = f"{e.input_name} is {i.name!r} in the graph"
            elif i.type != _ORT_TYPES[e.dtype]:
                problem = (
                    f"{e.input_name} ({e.path}) is {i.type} in the graph, {e.dtype} in the manifest"
                )
            elif len(static) != len(e.shape) or any(
                s is not None and s != m for s, m in zip(static, e.shape, strict=True)
            ):
                problem = (
                    f"{e.input_name} ({e.path}) is {i.shape} in the graph,"
                    f" {list(e.shape)} in the manifest"
                )
            if problem:
                break
    if problem:
        raise BundleError(f"{path.parent / BUNDLE_FILE} does not match {path.name}: {problem}")


@dataclass
class BundleSequence:
    feeds: dict[str, np.ndarray]
    length: int
    limit: int


@dataclass
class BundleDecoderState:
    feeds: dict[str, np.ndarray]


class KevinAhmRuntime:
    """Implements ``pocketcli.runtimes.base.Runtime`` over a bundle's graphs."""

    name = "kevinahm"

    def __init__(
        self, directory: str | Path, precision: str = "fp32", threads: int | None = None
    ) -> None:
        self.bundle = bundle = Bundle.read(directory)
        self.pack_dir = bundle.directory
        if precision not in bundle.precisions:
            have = ", ".join(bundle.precisions) or "none"
            raise BundleError(
                f"bundle {bundle.directory} has no {graph_file('flow_lm_main', precision)}"
                f" ({precision} graphs; it has: {have})"
            )
        self.precision = precision
        self.config = bundle.config()
        mimi_threads = decoder_threads(threads)
        threads = threads or default_threads()
        self._threads = threads
        paths = {}
        for graph in REQUIRED_GRAPHS:
            path = bundle.graph(graph, precision)
            if path is None:
                raise BundleError(
                    f"bundle {bundle.directory} is incomplete: {graph}.onnx is missing"
                )
            paths[graph] = path
        self._embed = _session(paths["text_conditioner"], 1)
        self._main = _session(paths["flow_lm_main"], threads)
        self._flow = _session(paths["flow_lm_flow"], 1)
        self._mimi = _session(paths["mimi_decoder"], mimi_threads)
        _check_states(self._main, paths["flow_lm_main"], bundle.flow_states, 2, 2)
        _check_states(self._mimi, paths["mimi_decoder"], bundle.mimi_states, 1, 1)
        for graph, session in (
            ("text_conditioner", self._embed),
            ("flow_lm_main", self._main),
            ("flow_lm_flow", self._flow),
            ("mimi_decoder", self._mimi),
        ):
            check_role(session, paths[graph], self._role(graph), BundleError)
        fl = self.config.flow_lm
        self._d_model, self._latent_dim = fl.transformer.d_model, fl.latent_dim
        self._check_graph_shapes(paths)
        self._check_tokenizer()
        self._main_outputs = [o.name for o in self._main.get_outputs()]
        self._mimi_outputs = [o.name for o in self._mimi.get_outputs()]
        self._layer_caches = [
            next(
                e.input_name
                for e in bundle.flow_states
                if e.path == f"transformer.layers.{i}.self_attn/cache"
            )
            for i in range(fl.transformer.num_layers)
        ]
        self._steps = [e.input_name for e in bundle.flow_states if e.key == "step"]
        self.capacity = bundle.flow_states[0].shape[2]
        n = fl.flow.num_time_conds
        self._time_names = ("s", "t")[2 - n :] if n else ()
        self._encoder: ort.InferenceSession | None = None
        self._encoder_path = bundle.graph("mimi_encoder", precision)

    def _role(self, graph: str) -> Role:
        """What each of the bundle's graphs takes (its states: bundle.json's manifests)."""
        flow = [e.input_name for e in self.bundle.flow_states]
        mimi = [e.input_name for e in self.bundle.mimi_states]
        return {
            "text_conditioner": role("a text conditioner", ["token_ids"]),
            "flow_lm_main": role("a FlowLM", ["sequence", "text_embeddings", *flow]),
            "flow_lm_flow": role("a flow head", ["c", "x"], ["s", "t"]),
            "mimi_decoder": role("a Mimi decoder", ["latent", *mimi]),
            "mimi_encoder": role("a Mimi encoder", ["audio"]),
        }[graph]

    def _check_graph_shapes(self, paths: dict[str, Path]) -> None:
        def dim(session: ort.InferenceSession, output: bool, index: int, axis: int) -> Any:
            values = session.get_outputs() if output else session.get_inputs()
            return values[index].shape[axis]

        checks = [
            (
                paths["text_conditioner"],
                dim(self._embed, True, 0, -1),
                self._d_model,
                "embedding width",
            ),
            (
                paths["flow_lm_main"],
                dim(self._main, False, 1, -1),
                self._d_model,
                "text_embeddings width",
            ),
            (
                paths["flow_lm_main"],
                dim(self._main, False, 0, -1),
                self._latent_dim,
                "sequence width",
            ),
            (
                paths["mimi_decoder"],
                dim(self._mimi, False, 0, -1),
                self._latent_dim,
                "latent width",
            ),
        ]
        for path, got, want, what in checks:
            if isinstance(got, int) and got != want:
                raise BundleError(f"{path}: {what} is {got}, bundle.json says {want}")

    @property
    def threads(self) -> int:
        return self._threads

    @property
    def tokenizer_path(self) -> Path:
        return self.bundle.tokenizer

    def _check_tokenizer(self) -> None:
        """The text table must have a row for every piece of the tokenizer."""
        from pocketcli.text.tokenizer import load_tokenizer

        tokenizer = self.bundle.tokenizer
        vocab = load_tokenizer(tokenizer, self.bundle.tokenizer_kind).vocab_size
        try:
            self._embed.run(None, {"token_ids": np.array([[vocab - 1]], np.int64)})
        except Exception:
            raise BundleError(
                f"{tokenizer} has {vocab} pieces, more than the rows of"
                f" {graph_file('text_conditioner', 'fp32')}'s table: another model's tokenizer?"
            ) from None

    # -- FlowLM ---------------------------------------------------------
    def embed_text(self, token_ids: np.ndarray) -> np.ndarray:
        ids = np.asarray(token_ids, np.int64).reshape(1, -1)
        return self._embed.run(None, {"token_ids": ids})[0][0]

    def start_sequence(self, voice: VoiceState | None, extra_capacity: int) -> BundleSequence:
        t = self.config.flow_lm.transformer
        used = voice.length if voice is not None else 0
        if used + extra_capacity > self.capacity:
            raise VoiceError(
                f"the voice ({used} positions) and a chunk ({extra_capacity}) do not fit the"
                f" bundle's {self.capacity}-position cache: use a shorter voice prompt"
            )
        feeds = {e.input_name: initial_state(e) for e in self.bundle.flow_states}
        if voice is not None:
            voice.check_fits(t.num_layers, t.kv_heads, t.head_dim)
            for i, name in enumerate(self._layer_caches):
                feeds[name][0, 0, :used] = voice.keys[i]
                feeds[name][1, 0, :used] = voice.values[i]
            for name in self._steps:
                feeds[name][:] = used
        return BundleSequence(feeds, used, used + extra_capacity)

    def _run_main(
        self, seq: BundleSequence, embeddings: np.ndarray, latents: np.ndarray
    ) -> tuple[np.ndarray, float]:
        n_new = embeddings.shape[1] + latents.shape[1]
        if seq.length + n_new > min(seq.limit, self.capacity):
            raise ValueError(f"KV cache full: {seq.length} + {n_new} positions exceed {seq.limit}")
        feeds = {"sequence": latents, "text_embeddings": embeddings, **seq.feeds}
        outs = self._main.run(None, feeds)
        for name, value in zip(self._main_outputs[2:], outs[2:], strict=True):
            seq.feeds["state_" + name.removeprefix("out_state_")] = value
        seq.length += n_new
        return outs[0][0], float(outs[1].reshape(-1)[0])

    def prefill(self, seq: BundleSequence, embeddings: np.ndarray) -> None:
        emb = np.ascontiguousarray(embeddings, np.float32)[None]
        self._run_main(seq, emb, np.zeros((1, 0, self._latent_dim), np.float32))

    def step(self, seq: BundleSequence, latent: np.ndarray) -> tuple[np.ndarray, float]:
        lat = np.asarray(latent, np.float32).reshape(1, 1, self._latent_dim)
        return self._run_main(seq, np.zeros((1, 0, self._d_model), np.float32), lat)

    def prefill_then_step(
        self, seq: BundleSequence, embeddings: np.ndarray, latent: np.ndarray
    ) -> tuple[np.ndarray, float]:
        emb = np.ascontiguousarray(embeddings, np.float32)[None]
        lat = np.asarray(latent, np.float32).reshape(1, 1, self._latent_dim)
        return self._run_main(seq, emb, lat)

    def sample_latent(self, z: np.ndarray, noise: np.ndarray, decode_steps: int) -> np.ndarray:
        cond = np.asarray(z, np.float32).reshape(1, -1)
        zero = np.zeros((1, 1), np.float32)

        def velocity(times: tuple[float, ...], x: np.ndarray) -> np.ndarray:
            feeds = {"c": cond, "s": zero, "t": zero, "x": x.reshape(1, -1)}
            for name, value in zip(self._time_names, times, strict=True):
                feeds[name] = np.full((1, 1), value, np.float32)
            return self._flow.run(None, feeds)[0][0]

        return integrate_flow(
            velocity, np.asarray(noise, np.float32), self.config.flow_lm.flow.type, decode_steps
        )

    def voice_state(self, seq: BundleSequence) -> VoiceState:
        n = seq.length
        keys = tuple(np.ascontiguousarray(seq.feeds[c][0, 0, :n]) for c in self._layer_caches)
        values = tuple(np.ascontiguousarray(seq.feeds[c][1, 0, :n]) for c in self._layer_caches)
        return VoiceState(keys, values)

    # -- voice cloning ----------------------------------------------------
    @property
    def cloning_unavailable_reason(self) -> str | None:
        if self._encoder_path is not None:
            return None
        return f"the bundle has no {graph_file('mimi_encoder', 'fp32')}"

    @property
    def bos_before_voice(self) -> np.ndarray | None:
        if not self.config.flow_lm.insert_bos_before_voice:
            return None
        path = self.bundle.bos_file
        try:
            if path is None:
                raise ValueError("bundle.json names no bos_before_voice_file")
            bos = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise BundleError(f"cannot read bos_before_voice of {self.pack_dir}: {exc}") from None
        if bos.size != self._d_model or not np.isfinite(bos).all():
            raise BundleError(f"{path}: bos_before_voice is not {self._d_model} finite floats")
        return bos.reshape(self._d_model).astype(np.float32)

    def encode_voice(self, audio_24k: np.ndarray) -> np.ndarray:
        reason = self.cloning_unavailable_reason
        if reason is not None or self._encoder_path is None:
            raise VoiceCloningUnavailable(unavailable_message(reason or ""))
        audio = np.ascontiguousarray(audio_24k, np.float32).reshape(1, 1, -1)
        if audio.shape[2] == 0:
            raise ValueError("cannot encode an empty voice prompt")
        if self._encoder is None:
            encoder = _session(self._encoder_path, self._threads)
            check_role(encoder, self._encoder_path, self._role("mimi_encoder"), BundleError)
            self._encoder = encoder
        latents = self._encoder.run(None, {"audio": audio})[0]
        frames = -(-audio.shape[2] // self.config.mimi.samples_per_frame)
        if latents.shape != (1, frames, self._d_model):
            raise BundleError(
                f"{self._encoder_path.name} returned {list(latents.shape)},"
                f" expected [1, {frames}, {self._d_model}]"
            )
        return latents[0]

    # -- Mimi -------------------------------------------------------------
    def start_decoder(self) -> BundleDecoderState:
        return BundleDecoderState({e.input_name: initial_state(e) for e in self.bundle.mimi_states})

    def decode(self, state: BundleDecoderState, latents: np.ndarray) -> np.ndarray:
        lat = np.asarray(latents, np.float32).reshape(1, -1, self._latent_dim)
        outs = self._mimi.run(None, {"latent": lat, **state.feeds})
        for name, value in zip(self._mimi_outputs[1:], outs[1:], strict=True):
            state.feeds["state_" + name.removeprefix("out_state_")] = value
        return outs[0].reshape(-1)
