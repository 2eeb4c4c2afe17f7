"""The ONNX Runtime backend: runs a pockettts pack on any OS.

Each graph is one InferenceSession; the FlowLM and the Mimi decoder run side
by side (the engine overlaps them), the FlowLM on two non-spinning threads,
the Mimi decoder, the text lookup and the flow head on one
(``default_threads``, ``decoder_threads``).
"""

from __future__ import annotations

import mmap
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnxruntime as ort
from safetensors.numpy import load_file

from pocketcli.config import ModelConfig
from pocketcli.cores import bound_threads, threads_override
from pocketcli.packs.manifest import (
    BATCH_GRAPHS,
    ENCODER_GRAPH,
    MANIFEST_NAME,
    MIMI_BATCH_GRAPH,
    PackError,
    PackManifest,
)
from pocketcli.packs.state_spec import HEAD_SCORES, PRESENT_KEY, PRESENT_VALUE
from pocketcli.runtimes.flow import integrate_flow
from pocketcli.runtimes.graph_roles import Role, check_role, check_trailing_dims, role
from pocketcli.voices.cloning import VoiceCloningUnavailable, unavailable_message
from pocketcli.voices.state import VoiceState
from pocketcli.words import WordsUnavailable

_ONE = np.ones((1, 1), np.float32)
# KV cache growth step, in positions (a chunk's text plus about 5 s of frames).
CACHE_STEP = 64
# A rebuilt batch stack's room past the positions its next step needs, at least: its
# capacity is that rounded up to whole steps. Every step reads (and masks) the whole
# capacity of every row, so room costs each frame; a whole step of room (the stack's
# rule before 2026-12-03) made a full-size step read 64-127 unused positions a row (at
# 8 rows about 25-50 MB a step), for no fewer rebuilds: a stack is rebuilt once every
# CACHE_STEP positions either way. A few positions keep a chunk that lands on a step's
# last position from being rebuilt again at its next frame.
STACK_ROOM = 8
# Rows of a batch stack, in whole steps (streams join without moving the others).
ROW_STEP = 8
# Mimi is bound by arithmetic and cache, not by its weights: a call's cost per frame grows
# once its largest activation (frames x samples per frame x SEANet filters, float32)
# leaves the core's cache. Measured on the full-size decoder (64 filters, CPU ms per frame,
# two frames a call): 12.2 for one stream a call, 11.8 for two, 14.1 for four, 16.4 for
# eight. So a batched call takes as many streams as keep that activation within this
# many bytes (two full-size frames): one full-size stream of a pair, eight tiny ones.
MIMI_CALL_BYTES = 2 * 1920 * 64 * 4


def kv_zeros(shape: tuple[int, ...]) -> np.ndarray:
    """A float32 KV buffer of zeros in its own anonymous mapping, returned to the OS when
    freed. From the heap, glibc's moving mmap threshold kept freed caches as RSS (8
    full-size streams: peak 993 MB against 866 MB mapped, 932 against 720 MB after)."""
    size = int(np.prod(shape)) * 4
    return np.ndarray(shape, np.float32, buffer=mmap.mmap(-1, max(size, 1)))


def heap_zeros(shape: tuple[int, ...]) -> np.ndarray:
    """A float32 buffer of zeros from the heap (see ``start_sequence``)."""
    return np.zeros(shape, np.float32)


def heap_empty(shape: tuple[int, ...]) -> np.ndarray:
    """A float32 buffer from the heap, left as it is (see ``start_sequence``)."""
    return np.empty(shape, np.float32)


@dataclass
class OnnxBatch:
    """The scheduler's rows stacked for ``flowlm_step_batch``: per layer keys
    ``[R, Hkv, Dh, C]`` and values ``[R, Hkv, C, Dh]``, of which a call feeds the first
    rows (one per member, in any order: a row's result does not depend on its place).

    Each member sequence's buffers are views of its row, so a step writes its new
    key in place and the next tick reads it without a copy. A stream that joins is
    copied into a free row (the others stay where they are), and one whose row lies
    past the rows fed is moved down. A row is free only when no live sequence holds it:
    a stream that sits out a tick (its reader behind) keeps its row. The whole stack is
    rebuilt (one copy of each member's row; sequences that sit out keep the old stack)
    only when a row needs more room or no row is free. Spare rows are untouched zero
    pages of an anonymous mapping: they cost address space, not memory.
    """

    row_step: int = ROW_STEP  # rows allocated in steps of this many (a solo stack: 1)
    keys: list[np.ndarray] = field(default_factory=list)
    values: list[np.ndarray] = field(default_factory=list)
    written: list[int] = field(default_factory=list)  # per row: positions written so far
    holders: list[weakref.ref[OnnxSequence] | None] = field(default_factory=list)

    @property
    def capacity(self) -> int:
        return self.values[0].shape[2] if self.values else 0

    @property
    def size(self) -> int:
        return self.keys[0].shape[0] if self.keys else 0

    def row_of(self, seq: OnnxSequence) -> int | None:
        """``seq``'s row, if its buffers are still views of this stack (a row call may
        have moved them out, into buffers of their own or another stack)."""
        return seq.row if seq.keys[0].base is self.keys[0] else None

    def held(self, row: int) -> bool:
        """Whether a live sequence's buffers are ``row`` of this stack."""
        ref = self.holders[row]
        seq = ref() if ref is not None else None
        return seq is not None and self.row_of(seq) == row


@dataclass
class OnnxSequence:
    """One chunk's KV cache: per layer keys ``[Hkv, Dh, C]`` (``[Hkv, C, Dh]`` for a
    fused batched step) and values ``[Hkv, C, Dh]``.

    ``C`` (the buffers' capacity) grows in steps of ``CACHE_STEP`` positions up to
    ``limit``, the positions the chunk may use: every step reads the whole buffer,
    so a buffer sized for the longest possible chunk made each frame read twice
    the cache it needed (measured: time to first audio -10% with growth).
    """

    keys: list[np.ndarray]
    values: list[np.ndarray]
    length: int = 0
    limit: int = 0
    solo: OnnxBatch | None = None  # its own one-row stack, where frames use the batched graph
    row: int = -1  # its row in the stack its buffers are views of (``OnnxBatch``), if any
    # Word timings: the text's positions [start, end) whose attention each call keeps in
    # ``text_scores`` ([heads, end - start], the word heads' scaled logits); None: not asked.
    text_span: tuple[int, int] | None = None
    text_scores: np.ndarray | None = None

    @property
    def capacity(self) -> int:
        return self.values[0].shape[1]


@dataclass
class _DecoderStack:
    """The batched Mimi decoder's last states: row ``i`` is ``members[i]``'s."""

    feeds: dict[str, np.ndarray]
    members: tuple[OnnxDecoderState, ...]


@dataclass(eq=False)
class OnnxDecoderState:
    """One stream's Mimi state: its own tensors, or a row of the last batched call's
    outputs (fed back as they are when the same streams decode together again)."""

    feeds: dict[str, np.ndarray] = field(default_factory=dict)
    stack: _DecoderStack | None = None
    row: int = 0

    def row_state(self, name: str) -> np.ndarray:
        if self.stack is None:
            return self.feeds[name]
        return self.stack.feeds[name][self.row]


def default_threads() -> int:
    """Two intra-op threads per session (POCKETTTS_THREADS overrides, bounded by the cores):
    the text prefill and the first frame's decode have a core to spare, and with spinning
    off the FlowLM and the Mimi thread do not starve each other (time to first audio -25%)."""
    return threads_override() or bound_threads(2)


def decoder_threads(threads: int | None = None) -> int:
    """Intra-op threads of a Mimi decoder session: ``threads`` (or POCKETTTS_THREADS) when
    chosen, else one. The engine decodes on its own thread while the FlowLM steps on
    another, so the two cores are already both busy; a second thread inside each Mimi call
    only adds hand-offs: full-size int8, one stream 4.6-5.3 CPU-ms a frame of Mimi on one
    thread against 6.0-6.6 on two, and 4.4-4.9 against 5.1-5.8 a stream-frame at 8 streams
    (benchmarks/README.md, issue 34). The FlowLM keeps two: its text prefill is most of a
    lone stream's first audio."""
    return bound_threads(threads) if threads else threads_override() or 1


def _takes(session: ort.InferenceSession, name: str) -> bool:
    return any(i.name == name for i in session.get_inputs())


def _fused(session: ort.InferenceSession) -> bool:
    """Whether a batched step is the fused form (``flowlm_graphs``): its caches are keys
    and values ``[B, Hkv, C, Dh]``, written in place by the graph through I/O binding."""
    return any(o.name == PRESENT_KEY.format(0) for o in session.get_outputs())


def _session(
    path: Path, threads: int, config: dict[str, str] | None = None
) -> ort.InferenceSession:
    """Our packs' session settings; ``config``: session config entries on top."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    for key, value in (config or {}).items():
        options.add_session_config_entry(key, value)
    if threads > 1:
        # Two busy-waiting pools (FlowLM and Mimi run at once) would starve each other.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    try:
        return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # ORT raises its own exception types
        raise PackError(f"cannot load {path.name}: {exc}") from exc


@dataclass(frozen=True)
class PackGeneration:
    """The graphs one generation of pack is run with, and the calls each serves."""

    name: str
    prefill: str  # the text prefills (prefill, prefill_then_step)
    frames: str  # a frame's FlowLM step (step, step_batch)
    head: str  # the flow head (sample_latent, sample_latent_batch)

    @property
    def graphs(self) -> tuple[str, ...]:
        """Loaded with the pack (with ``text_embedding`` and one Mimi decoder)."""
        return tuple(dict.fromkeys((self.prefill, self.frames, self.head)))


# Newest first. Frames go through the batched graphs whenever a pack has them (one row when
# alone), so a stream's bytes never depend on what shares its calls: the int8 row graphs
# scale a call's activations by one number, and even in fp32 the row and batched graphs
# round differently (about 1e-7). A batched step that takes embeddings (packs built since
# 2026-12-02) runs the prefills too, as one row, and the one-sequence step and head are
# never loaded: one copy of the weights.
GENERATIONS = (
    PackGeneration("batched prefills", "flowlm_step_batch", "flowlm_step_batch", "flow_head_batch"),
    PackGeneration("batched frames", "flowlm_step", "flowlm_step_batch", "flow_head_batch"),
    PackGeneration("one stream a call", "flowlm_step", "flowlm_step", "flow_head"),
)
# Every Mimi call goes through the batched decoder when the precision has one (one row
# when alone, the same bytes alone and together); the one-stream graph then stays unloaded.
MIMI_GRAPHS = (MIMI_BATCH_GRAPH, "mimi_decoder")
# The table lookup and the flow head's [1, 512] products are too small to split: waking a
# second thread costs more than it saves (flow head at int8: 0.4 ms on one, 0.7 on two).
_ONE_THREAD = ("text_embedding", "flow_head", "flow_head_batch")


def _keep_text_scores(seq: OnnxSequence, scores: np.ndarray, at: Callable[[int], int]) -> None:
    """``seq``'s text positions of one row's ``head_scores [heads, keys]`` (``at``: a
    position's key index in the graph's order)."""
    assert seq.text_span is not None
    start, end = seq.text_span
    first = at(start)
    seq.text_scores = np.array(scores[:, first : first + end - start], np.float32)


def pack_generation(files: dict[str, str], takes_embeddings: Callable[[], bool]) -> PackGeneration:
    """The generation of a pack whose graphs are ``files``; ``takes_embeddings`` asks its
    batched step (loading it) whether it runs prefills."""
    if not all(name in files for name in BATCH_GRAPHS):
        return GENERATIONS[2]
    return GENERATIONS[0] if takes_embeddings() else GENERATIONS[1]


class OnnxRuntime:
    """Implements ``pocketcli.runtimes.base.Runtime`` over the graphs of one pack."""

    name = "onnx"
    # Different streams' Mimi decodes may run at once (the scheduler's two Mimi lanes):
    # a session runs concurrently, and each call reads and writes only its own state.
    parallel_decodes = True

    def __init__(
        self, pack_dir: str | Path, precision: str = "fp32", threads: int | None = None
    ) -> None:
        pack_dir = Path(pack_dir)
        self.manifest = PackManifest.read(pack_dir)
        if precision not in self.manifest.graphs:
            have = ", ".join(self.manifest.precisions)
            raise PackError(f"pack {pack_dir} has no {precision} graphs (it has: {have})")
        self.precision, self.pack_dir = precision, pack_dir
        self.config: ModelConfig = self.manifest.config
        self._threads = bound_threads(threads) if threads else default_threads()
        self._decoder_threads = decoder_threads(threads)
        t = self.config.flow_lm.transformer
        self._layers, self._kv_heads, self._head_dim = t.num_layers, t.kv_heads, t.head_dim
        self._d_model, self._latent_dim = t.d_model, self.config.flow_lm.latent_dim
        self._sessions: dict[str, ort.InferenceSession] = {}
        files = self.manifest.graphs[precision]
        self.generation = pack_generation(
            files, lambda: _takes(self._load("flowlm_step_batch"), "embeddings")
        )
        mimi = next(name for name in MIMI_GRAPHS if name in files)
        for graph in ("text_embedding", *self.generation.graphs, mimi):
            self._load(graph)
        self.constants = load_file(str(pack_dir / self.manifest.constants_file))
        self._prefill_batched = self.generation.prefill in BATCH_GRAPHS
        self._frames_batched = self.generation.frames in BATCH_GRAPHS
        self._embed = self._sessions["text_embedding"]
        self._step = self._sessions[self.generation.prefill]
        self._head = self._sessions.get("flow_head")
        self._mimi = self._sessions.get("mimi_decoder")
        self._mimi_batch = self._sessions.get(MIMI_BATCH_GRAPH)
        self._mimi_outputs = [o.name for o in self._sessions[mimi].get_outputs()]
        head = self._sessions[self.generation.head]
        self._head_times = [i.name for i in head.get_inputs() if i.name in ("s", "t")]
        self._step_outputs = [o.name for o in self._step.get_outputs()]
        batch_step = self._sessions.get("flowlm_step_batch")
        self._batch_outputs = [o.name for o in batch_step.get_outputs()] if batch_step else []
        # A fused batched step (it then runs every FlowLM call): keys [Hkv, C, Dh], each
        # call's new positions written into the buffers by the graph.
        self._fused = batch_step is not None and _fused(batch_step)
        self._no_embeddings = np.zeros((1, 0, self._d_model), np.float32)
        self._no_latents = np.zeros((1, 0, self._latent_dim), np.float32)
        self._voice_layout: tuple[VoiceState, list[np.ndarray], list[np.ndarray]] | None = None
        self._mimi_zeros: dict[str, np.ndarray] | None = None
        seanet = self.config.mimi.decoder_seanet
        self._mimi_frame_bytes = self.config.mimi.samples_per_frame * seanet.n_filters * 4

    def _load(self, graph: str) -> ort.InferenceSession:
        """The session of one of the pack's graphs (loaded once), checked against its role:
        its inputs and sizes are those pack.json describes."""
        if graph not in self._sessions:
            path = self.pack_dir / self.manifest.graphs[self.precision][graph]
            session = _session(path, self._threads_of(graph))
            expected, dims = self._role(graph, session)
            check_role(session, path, expected)
            check_trailing_dims(session, path, dims, MANIFEST_NAME)
            self._sessions[graph] = session
        return self._sessions[graph]

    def _threads_of(self, graph: str) -> int:
        if graph in _ONE_THREAD:
            return 1
        return self._decoder_threads if graph in MIMI_GRAPHS else self._threads

    def _role(
        self, graph: str, session: ort.InferenceSession
    ) -> tuple[Role, dict[str, tuple[int | None, ...]]]:
        """What ``graph`` must take, and the last sizes of its inputs pack.json implies."""
        caches: dict[str, tuple[int | None, ...]] = {}
        fused = graph == "flowlm_step_batch" and _fused(session)
        for i in range(self._layers):
            caches[f"key_cache_{i}"] = (
                (self._kv_heads, None, self._head_dim)
                if fused
                else (self._kv_heads, self._head_dim, None)
            )
            caches[f"value_cache_{i}"] = (self._kv_heads, None, self._head_dim)
        states = {f"state.{s.name}": s.shape for s in self.manifest.mimi_states}
        z = {"z": (self.config.flow_lm.cond_dim,)}
        if graph == "text_embedding":
            return role("a text embedding", ["token_ids"]), {}
        if graph == "flowlm_step":
            return role("a FlowLM step", ["embeddings", "latents", "position", *caches]), caches
        if graph == "flowlm_step_batch":
            takes = ["latents", "positions", *caches]
            return role("a batched FlowLM step", takes, ["embeddings"]), caches
        if graph in ("flow_head", "flow_head_batch"):
            return role("a flow head", ["z", "x"], ["s", "t"]), z
        if graph in MIMI_GRAPHS:
            return role("a Mimi decoder", ["latents", *states]), states
        return role("a Mimi encoder", ["audio"]), {}

    @property
    def loaded_graphs(self) -> tuple[str, ...]:
        """The pack's graphs this runtime holds a session of (each holds its weights)."""
        return tuple(self._sessions)

    @property
    def threads(self) -> int:
        """Intra-op threads of the FlowLM and encoder sessions (for reports; the Mimi
        decoder's: ``decoder_threads``)."""
        return self._threads

    @property
    def tokenizer_path(self) -> Path:
        return self.pack_dir / self.manifest.tokenizer_file

    # -- FlowLM ---------------------------------------------------------
    def embed_text(self, token_ids: np.ndarray) -> np.ndarray:
        ids = np.asarray(token_ids, np.int64).reshape(1, -1)
        return self._embed.run(None, {"token_ids": ids})[0][0]

    def start_sequence(self, voice: VoiceState | None, extra_capacity: int) -> OnnxSequence:
        used = voice.length if voice is not None else 0
        limit = max(1, used + extra_capacity)
        # From the heap: a chunk's first buffers live until its first frame joins a stack
        # (or until it grows), and the heap hands back pages a freed cache used. Fresh
        # pages of a mapping cost a fault each: 6 ms for a full-size chunk's buffers here,
        # against 0.4 ms from the heap, all of it before the chunk's first audio. The
        # fused step reads no position past a row's length, so its buffers are not
        # zeroed: a page is touched only once a position in it is written (zeroing a
        # full-size chunk's 5 MB touched every page: 1-1.5 ms more before its prefill).
        zeros = heap_empty if self._fused else heap_zeros
        seq = OnnxSequence(*self._cache_buffers(min(limit, used + CACHE_STEP), zeros), used, limit)
        if voice is not None:
            voice_keys, voice_values = self._voice_in_cache_layout(voice)
            for i in range(self._layers):
                seq.keys[i][self._keys_at(slice(0, used))] = voice_keys[i]
                seq.values[i][:, :used] = voice_values[i]
        return seq

    def _key_shape(self, capacity: int) -> tuple[int, int, int]:
        if self._fused:
            return (self._kv_heads, capacity, self._head_dim)
        return (self._kv_heads, self._head_dim, capacity)

    def _keys_at(self, where: slice | np.ndarray, *row: int | np.ndarray) -> tuple:
        """The index of positions ``where`` in a key buffer (of ``row`` of a stack)."""
        return (
            (*row, slice(None), where) if self._fused else (*row, slice(None), slice(None), where)
        )

    def _cache_buffers(
        self, capacity: int, zeros: Callable[[tuple[int, ...]], np.ndarray] = kv_zeros
    ) -> tuple[list[np.ndarray], list[np.ndarray]]:
        shape_k = self._key_shape(capacity)
        shape_v = (self._kv_heads, capacity, self._head_dim)
        return (
            [zeros(shape_k) for _ in range(self._layers)],
            [zeros(shape_v) for _ in range(self._layers)],
        )

    def _grow(self, seq: OnnxSequence, needed: int) -> None:
        """Moves the cache into buffers with room for ``needed`` positions (and a step more)."""
        keys, values = self._cache_buffers(min(seq.limit, needed + CACHE_STEP))
        n = seq.length
        to_n = self._keys_at(slice(0, n))
        for i in range(self._layers):
            keys[i][to_n] = seq.keys[i][to_n]
            values[i][:, :n] = seq.values[i][:, :n]
        seq.keys, seq.values = keys, values

    def _voice_in_cache_layout(self, voice: VoiceState) -> tuple[list[np.ndarray], ...]:
        """The voice's keys ``[Hkv, Dh, T]`` (fused: ``[Hkv, T, Dh]``) and values
        ``[Hkv, T, Dh]``, transposed once per
        voice (every chunk starts from the same voice; a strided copy per chunk costs
        more than the contiguous one)."""
        cached = self._voice_layout
        if cached is not None and cached[0] is voice:
            return cached[1], cached[2]
        voice.check_fits(self._layers, self._kv_heads, self._head_dim)
        order = (1, 0, 2) if self._fused else (1, 2, 0)
        keys = [np.ascontiguousarray(k.transpose(order)) for k in voice.keys]
        values = [np.ascontiguousarray(v.transpose(1, 0, 2)) for v in voice.values]
        self._voice_layout = (voice, keys, values)
        return keys, values

    def _run_step(
        self, seq: OnnxSequence, embeddings: np.ndarray, latents: np.ndarray
    ) -> tuple[np.ndarray, float]:
        n_new = embeddings.shape[1] + latents.shape[1]
        if seq.length + n_new > seq.limit:
            raise ValueError(f"KV cache full: {seq.length} + {n_new} positions exceed {seq.limit}")
        if seq.length + n_new > seq.capacity:
            self._grow(seq, seq.length + n_new)
        # The batched step takes one row: its caches as [1, ...] views, its outputs' row 0.
        row = self._prefill_batched
        lead = 0 if row else slice(None)
        feeds = {
            "embeddings": embeddings,
            "latents": latents,
            "positions" if row else "position": np.array([seq.length], np.int64),
        }
        names = self._outputs_for([seq], self._step_outputs)
        start, end = seq.length, seq.length + n_new
        if self._fused:  # the graph writes the new positions into the buffers
            keys, values = [k[None] for k in seq.keys], [v[None] for v in seq.values]
            out = self._run_in_place(self._step, feeds, keys, values, names)
        else:
            for i in range(self._layers):
                feeds[f"key_cache_{i}"] = seq.keys[i][None] if row else seq.keys[i]
                feeds[f"value_cache_{i}"] = seq.values[i][None] if row else seq.values[i]
            out = dict(zip(names, self._step.run(names, feeds), strict=True))
            for i in range(self._layers):
                seq.keys[i][:, :, start:end] = out[f"new_keys_{i}"][lead]
                seq.values[i][:, start:end] = out[f"new_values_{i}"][lead]
        if seq.text_span is not None:  # the batched step (watch_text)
            _keep_text_scores(seq, out[HEAD_SCORES][0], self._key_index(start, n_new))
        seq.length = end
        return out["z"][0], float(out["eos_logit"][0, 0])

    def _key_index(self, start: int, n_new: int) -> Callable[[int], int]:
        """Where position ``p`` is among a call's keys in its ``head_scores`` (the call's
        ``n_new`` positions from ``start``): fused, in position order; plain, its new
        keys first, then the cache."""
        if self._fused:
            return lambda p: p
        return lambda p: p - start if p >= start else n_new + p

    def _run_in_place(
        self,
        session: ort.InferenceSession,
        feeds: dict[str, np.ndarray],
        keys: Sequence[np.ndarray],
        values: Sequence[np.ndarray],
        names: Sequence[str],
    ) -> dict[str, np.ndarray]:
        """Runs the fused step with each layer's cache buffers bound as both its past
        input and its present output (so the graph writes into them); returns the other
        outputs of ``names``."""
        io = session.io_binding()
        for name, value in feeds.items():
            io.bind_cpu_input(name, value)
        for i in range(self._layers):
            for past, present, buffer in (
                (f"key_cache_{i}", PRESENT_KEY.format(i), keys[i]),
                (f"value_cache_{i}", PRESENT_VALUE.format(i), values[i]),
            ):
                if not buffer.flags.c_contiguous:  # ORT would bind a copy: writes lost
                    raise RuntimeError(f"{past} is not one contiguous buffer")
                bound = ort.OrtValue.ortvalue_from_numpy(buffer)
                io.bind_ortvalue_input(past, bound)
                io.bind_ortvalue_output(present, bound)
        fetched = [name for name in names if not name.startswith("present_")]
        for name in fetched:
            io.bind_output(name)
        session.run_with_iobinding(io)
        outs = io.get_outputs()[2 * self._layers :]  # in the order bound
        return {name: value.numpy() for name, value in zip(fetched, outs, strict=True)}

    def _outputs_for(self, seqs: Sequence[OnnxSequence], names: list[str]) -> list[str]:
        """Which of a session's outputs ``names`` to fetch: the word heads' scores only
        when a row asks (they are the only output a step can go without)."""
        if any(seq.text_span is not None for seq in seqs):
            return names
        return [name for name in names if name != HEAD_SCORES]

    @property
    def words_unavailable_reason(self) -> str | None:
        """Why this pack cannot time words (None: it can)."""
        if not self.config.flow_lm.timestamp_heads:
            return "the model's config has no timestamp_heads (no published head list for it)"
        batched = self.generation.prefill == self.generation.frames == "flowlm_step_batch"
        step = self._sessions[self.generation.frames]
        if not batched or HEAD_SCORES not in (o.name for o in step.get_outputs()):
            return (
                f"the pack {self.pack_dir} was built before word timings: rebuild it"
                " (pockettts download --rebuild, or build_pack)"
            )
        return None

    def watch_text(self, seq: OnnxSequence, n_tokens: int) -> None:
        """The next ``n_tokens`` positions of ``seq`` are a chunk's text: from now on each
        call on ``seq`` keeps the word heads' scores over them in ``seq.text_scores``."""
        reason = self.words_unavailable_reason
        if reason is not None:
            raise WordsUnavailable(f"cannot time words: {reason}")
        seq.text_span = (seq.length, seq.length + n_tokens)

    def text_attention(self, seq: OnnxSequence) -> np.ndarray | None:
        """The word heads' logits over the text in ``seq``'s last call (``watch_text``)."""
        return seq.text_scores

    def prefill(self, seq: OnnxSequence, embeddings: np.ndarray) -> None:
        emb = np.ascontiguousarray(embeddings, np.float32)[None]
        self._run_step(seq, emb, self._no_latents)

    def step(self, seq: OnnxSequence, latent: np.ndarray) -> tuple[np.ndarray, float]:
        if self._frames_batched:
            seq.solo = seq.solo or OnnxBatch(row_step=1)
            z, eos = self.step_batch(seq.solo, [seq], np.asarray(latent, np.float32)[None])
            return z[0], float(eos[0])
        lat = np.asarray(latent, np.float32).reshape(1, 1, self._latent_dim)
        return self._run_step(seq, self._no_embeddings, lat)

    def prefill_then_step(
        self, seq: OnnxSequence, embeddings: np.ndarray, latent: np.ndarray
    ) -> tuple[np.ndarray, float]:
        """The step graph takes embeddings and latents in one call (z is the last row's):
        the first frame rides on the text prefill instead of a second pass over the
        weights, which at one row is bound by memory (about 5 ms at int8)."""
        emb = np.ascontiguousarray(embeddings, np.float32)[None]
        lat = np.asarray(latent, np.float32).reshape(1, 1, self._latent_dim)
        return self._run_step(seq, emb, lat)

    def sample_latent(self, z: np.ndarray, noise: np.ndarray, decode_steps: int) -> np.ndarray:
        if self._frames_batched:
            one = np.asarray(noise, np.float32)[None]
            return self.sample_latent_batch(np.asarray(z, np.float32)[None], one, decode_steps)[0]
        cond = np.asarray(z, np.float32).reshape(1, -1)

        def velocity(times: tuple[float, ...], x: np.ndarray) -> np.ndarray:
            feeds = {"z": cond, "x": x.reshape(1, -1)}
            for name, value in zip(self._head_times, times, strict=True):
                feeds[name] = _ONE * np.float32(value)
            assert self._head is not None
            return self._head.run(None, feeds)[0][0]

        return integrate_flow(
            velocity, np.asarray(noise, np.float32), self.config.flow_lm.flow.type, decode_steps
        )

    def voice_state(self, seq: OnnxSequence) -> VoiceState:
        n = seq.length
        order = (1, 0, 2) if self._fused else (2, 0, 1)
        to_n = self._keys_at(slice(0, n))
        keys = tuple(np.ascontiguousarray(k[to_n].transpose(order)) for k in seq.keys)
        values = tuple(np.ascontiguousarray(v[:, :n].transpose(1, 0, 2)) for v in seq.values)
        return VoiceState(keys, values)

    # -- many sequences at once (the scheduler) ----------------------------
    @property
    def batch_unavailable_reason(self) -> str | None:
        if not self._frames_batched:
            files = self.manifest.graphs[self.precision]
            missing = [name for name in BATCH_GRAPHS if name not in files]
            return f"the pack has no {' or '.join(missing)} graph (built before batching)"
        return None

    def _batch_graphs(self) -> tuple[ort.InferenceSession, ort.InferenceSession]:
        reason = self.batch_unavailable_reason
        if reason is not None:
            raise RuntimeError(reason)
        return self._sessions["flowlm_step_batch"], self._sessions["flow_head_batch"]

    def start_batch(self) -> OnnxBatch:
        self._batch_graphs()
        return OnnxBatch()

    def _restack(self, batch: OnnxBatch, seqs: Sequence[OnnxSequence], capacity: int) -> None:
        rows = -(-len(seqs) // batch.row_step) * batch.row_step
        shape_k = (rows, *self._key_shape(capacity))
        shape_v = (rows, self._kv_heads, capacity, self._head_dim)
        batch.keys = [kv_zeros(shape_k) for _ in range(self._layers)]
        batch.values = [kv_zeros(shape_v) for _ in range(self._layers)]
        batch.written, batch.holders = [0] * rows, [None] * rows
        for row, seq in enumerate(seqs):
            self._into_row(batch, seq, row)

    def _into_row(self, batch: OnnxBatch, seq: OnnxSequence, row: int) -> None:
        """Copies ``seq``'s cache into ``row`` and makes its buffers views of that row.
        What a former holder wrote past ``seq``'s length is cleared: masked positions are
        multiplied by exact zeros, which a NaN left by a failed stream would survive."""
        n, end = seq.length, batch.written[row]
        for i in range(self._layers):
            batch.keys[i][self._keys_at(slice(0, n), row)] = seq.keys[i][self._keys_at(slice(0, n))]
            batch.values[i][row, :, :n] = seq.values[i][:, :n]
            if end > n:
                batch.keys[i][self._keys_at(slice(n, end), row)] = 0.0
                batch.values[i][row, :, n:end] = 0.0
            seq.keys[i] = batch.keys[i][row]
            seq.values[i] = batch.values[i][row]
        seq.row = row
        batch.holders[row] = weakref.ref(seq)
        batch.written[row] = n

    def _place(self, batch: OnnxBatch, seqs: Sequence[OnnxSequence]) -> list[int] | None:
        """Every sequence in one of the first ``len(seqs)`` rows: their rows, in order;
        None when too few of those rows are free (held by no live sequence)."""
        k = len(seqs)
        rows = [batch.row_of(seq) for seq in seqs]
        rows = [-1 if row is None or row >= k else row for row in rows]
        moving = [i for i, row in enumerate(rows) if row < 0]
        free = [row for row in range(k) if row not in rows and not batch.held(row)]
        if len(moving) > len(free):
            return None
        for i, row in zip(moving, free, strict=False):
            self._into_row(batch, seqs[i], row)
            rows[i] = row
        return rows

    def step_batch(
        self, batch: OnnxBatch, seqs: Sequence[OnnxSequence], latents: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        step, _ = self._batch_graphs()
        for seq in seqs:
            if seq.length + 1 > seq.limit:
                raise ValueError(f"KV cache full: {seq.length} + 1 positions exceed {seq.limit}")
        needed = max(seq.length for seq in seqs) + 1
        k = len(seqs)
        placed = self._place(batch, seqs) if needed <= batch.capacity and k <= batch.size else None
        if placed is None:
            # Capacity in whole steps: the same shapes alone and in a batch. No further
            # than a row may go (its limit, in whole steps): a full-size stack of 8 rows
            # costs 8 x 48 KB per position.
            steps = -(-(needed + STACK_ROOM) // CACHE_STEP)
            most = -(-max(seq.limit for seq in seqs) // CACHE_STEP)
            self._restack(batch, seqs, min(steps, most) * CACHE_STEP)
            placed = list(range(k))
        rows = placed
        fed = np.empty((k, 1, self._latent_dim), np.float32)
        fed[rows] = np.asarray(latents, np.float32).reshape(k, 1, self._latent_dim)
        positions = np.empty(k, np.int64)
        positions[rows] = [seq.length for seq in seqs]
        feeds: dict[str, np.ndarray] = {"latents": fed, "positions": positions}
        if self._prefill_batched:  # the graph takes embeddings: none in a frame
            feeds["embeddings"] = np.zeros((k, 0, self._d_model), np.float32)
        names = self._outputs_for(seqs, self._batch_outputs)
        if self._fused:  # the graph writes each row's new key and value in place
            keys, values = [a[:k] for a in batch.keys], [a[:k] for a in batch.values]
            out = self._run_in_place(step, feeds, keys, values, names)
        else:
            for i in range(self._layers):
                feeds[f"key_cache_{i}"] = batch.keys[i][:k]
                feeds[f"value_cache_{i}"] = batch.values[i][:k]
            out = dict(zip(names, step.run(names, feeds), strict=True))
            # The rows fed are the first k, each its new key and value at its own
            # position: one scatter per layer and tensor for all of them, not one per row.
            fed_rows = np.arange(k)
            for i in range(self._layers):
                batch.keys[i][fed_rows, :, :, positions] = out[f"new_keys_{i}"][:, :, :, 0]
                batch.values[i][fed_rows, :, positions] = out[f"new_values_{i}"][:, :, 0]
        for seq, row in zip(seqs, rows, strict=True):
            if seq.text_span is not None:  # the text is in the cache (before the new key)
                _keep_text_scores(seq, out[HEAD_SCORES][row], self._key_index(seq.length, 1))
            seq.length = batch.written[row] = seq.length + 1
        return out["z"][rows], out["eos_logit"][rows, 0]

    def sample_latent_batch(
        self, z: np.ndarray, noise: np.ndarray, decode_steps: int
    ) -> np.ndarray:
        _, head = self._batch_graphs()
        cond = np.ascontiguousarray(z, np.float32)
        ones = np.ones((cond.shape[0], 1), np.float32)

        def velocity(times: tuple[float, ...], x: np.ndarray) -> np.ndarray:
            feeds = {"z": cond, "x": x}
            for name, value in zip(self._head_times, times, strict=True):
                feeds[name] = ones * np.float32(value)
            return head.run(None, feeds)[0]

        return integrate_flow(
            velocity, np.asarray(noise, np.float32), self.config.flow_lm.flow.type, decode_steps
        )

    # -- voice cloning ----------------------------------------------------
    @property
    def cloning_unavailable_reason(self) -> str | None:
        if self.manifest.voice_cloning and ENCODER_GRAPH in self.manifest.graphs[self.precision]:
            return None
        return self.manifest.voice_cloning_note or "the pack has no Mimi encoder"

    @property
    def bos_before_voice(self) -> np.ndarray | None:
        if not self.config.flow_lm.insert_bos_before_voice:
            return None
        bos = self.constants.get("bos_before_voice")
        if bos is None or bos.size != self._d_model or not np.isfinite(bos).all():
            raise PackError(
                f"pack {self.pack_dir}: bos_before_voice is missing or is not"
                f" {self._d_model} finite floats; rebuild the pack"
            )
        return bos.reshape(self._d_model).astype(np.float32)

    def encode_voice(self, audio_24k: np.ndarray) -> np.ndarray:
        reason = self.cloning_unavailable_reason
        if reason is not None:
            raise VoiceCloningUnavailable(unavailable_message(reason))
        audio = np.ascontiguousarray(audio_24k, np.float32).reshape(1, -1)
        if audio.shape[1] == 0:
            raise ValueError("cannot encode an empty voice prompt")
        graph = self.manifest.graphs[self.precision][ENCODER_GRAPH]
        conditioning = self._load(ENCODER_GRAPH).run(None, {"audio": audio})[0]
        frames = -(-audio.shape[1] // self.config.mimi.samples_per_frame)
        if conditioning.shape != (frames, self._d_model):
            raise PackError(
                f"{graph} returned {list(conditioning.shape)}, expected [{frames}, {self._d_model}]"
            )
        return conditioning

    # -- Mimi -------------------------------------------------------------
    def start_decoder(self) -> OnnxDecoderState:
        # Every stream starts from the same zeros, which a decode only reads (its new
        # state replaces them): one read-only set, not 2 MB zeroed per chunk.
        if self._mimi_zeros is None:
            zeros = {}
            for s in self.manifest.mimi_states:
                zeros[f"state.{s.name}"] = np.zeros(s.shape, np.dtype(s.dtype))
                zeros[f"state.{s.name}"].flags.writeable = False
            self._mimi_zeros = zeros
        return OnnxDecoderState(dict(self._mimi_zeros))

    def decode(self, state: OnnxDecoderState, latents: np.ndarray) -> np.ndarray:
        if self._mimi is None:  # the pack's batched decoder, one row
            return self.decode_batch([state], np.asarray(latents, np.float32)[None])[0]
        lat = np.asarray(latents, np.float32).reshape(1, -1, self._latent_dim)
        outs = self._mimi.run(None, {"latents": lat, **state.feeds})
        audio = None
        for name, value in zip(self._mimi_outputs, outs, strict=True):
            if name == "audio":
                audio = value[0]
            else:
                state.feeds["state." + name.removeprefix("state_out.")] = value
        assert audio is not None
        return audio

    # -- Mimi for many streams at once (the scheduler) ----------------------
    @property
    def decode_batch_unavailable_reason(self) -> str | None:
        if self._mimi_batch is None:
            return (
                f"the pack's {self.precision} graphs have no {MIMI_BATCH_GRAPH}"
                " (int8 and int4 decode each stream on its own; or built before it)"
            )
        return None

    def decode_rows(self, frames: int) -> int:
        """Streams per batched call at ``frames`` latents each (``MIMI_CALL_BYTES``)."""
        return max(1, MIMI_CALL_BYTES // (max(1, frames) * self._mimi_frame_bytes))

    def decode_batch(self, states: Sequence[OnnxDecoderState], latents: np.ndarray) -> np.ndarray:
        """``decode`` for each state at once: latents ``[B, K, latent_dim]`` -> audio
        ``[B, K * samples_per_frame]``. The rows' states are stacked (unless these same
        states made the last call together, in this order) and split back as views."""
        if self._mimi_batch is None:
            raise RuntimeError(self.decode_batch_unavailable_reason)
        members = tuple(states)
        stack = members[0].stack
        if stack is not None and stack.members == members:
            feeds = stack.feeds
        else:
            feeds = {
                f"state.{spec.name}": np.stack([s.row_state(f"state.{spec.name}") for s in members])
                for spec in self.manifest.mimi_states
            }
        lat = np.asarray(latents, np.float32).reshape(len(members), -1, self._latent_dim)
        outs = self._mimi_batch.run(None, {"latents": lat, **feeds})
        audio = None
        stacked: dict[str, np.ndarray] = {}
        for name, value in zip(self._mimi_outputs, outs, strict=True):
            if name == "audio":
                audio = value
            else:
                stacked["state." + name.removeprefix("state_out.")] = value
        new = _DecoderStack(stacked, members)
        for row, state in enumerate(members):
            state.stack, state.row, state.feeds = new, row, {}
        assert audio is not None
        return audio
