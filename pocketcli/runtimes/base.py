"""The narrow interface between the generation engine and an inference backend.

The engine (``pocketcli.engine``) owns everything that is model logic on the
host: text, noise, the EOS rule, frame budgets, chunking, fade-in, streaming.
A runtime owns only tensors and networks. ONNX Runtime implements this on
every OS; CoreML implements it on macOS.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from pocketcli.config import ModelConfig
from pocketcli.cores import bound_threads
from pocketcli.errors import BackendError
from pocketcli.voices.state import VoiceState

RuntimeError_ = BackendError  # its first name (named to avoid shadowing the builtin)


class FlowSequence(Protocol):
    """The FlowLM's KV cache for one chunk: opaque to the engine."""

    @property
    def length(self) -> int:
        """Number of positions already in the cache."""
        ...


class DecoderState(Protocol):
    """Streaming Mimi state for one chunk: opaque to the engine."""


class Runtime(Protocol):
    config: ModelConfig

    def embed_text(self, token_ids: np.ndarray) -> np.ndarray:
        """Token ids ``[T]`` -> embeddings ``[T, d_model]``."""
        ...

    def start_sequence(self, voice: VoiceState | None, extra_capacity: int) -> FlowSequence:
        """A fresh cache holding a copy of the voice, with room for ``extra_capacity`` more."""
        ...

    def prefill(self, seq: FlowSequence, embeddings: np.ndarray) -> None:
        """Appends conditioning (voice or text embeddings ``[T, d_model]``) to the cache."""
        ...

    def step(self, seq: FlowSequence, latent: np.ndarray) -> tuple[np.ndarray, float]:
        """Appends one latent (NaN = BOS) and returns ``(z, eos_logit)`` for it."""
        ...

    def prefill_then_step(
        self, seq: FlowSequence, embeddings: np.ndarray, latent: np.ndarray
    ) -> tuple[np.ndarray, float]:
        """``prefill(embeddings)`` then ``step(latent)``, in one pass where the backend can:
        a chunk's text and its first frame then read the FlowLM weights once, not twice."""
        ...

    def sample_latent(self, z: np.ndarray, noise: np.ndarray, decode_steps: int) -> np.ndarray:
        """Runs the flow head from ``noise`` (x0) to the next latent, conditioned on ``z``."""
        ...

    def voice_state(self, seq: FlowSequence) -> VoiceState:
        """The cache as a portable voice state (after a voice prefill)."""
        ...

    # -- voice cloning (pocketcli.voices.cloning drives these) ------------
    @property
    def cloning_unavailable_reason(self) -> str | None:
        """None when ``encode_voice`` works; else why not (e.g. zeroed encoder weights)."""
        ...

    @property
    def bos_before_voice(self) -> np.ndarray | None:
        """The ``[d_model]`` row prefilled before voice conditioning, if the model has one."""
        ...

    def encode_voice(self, audio_24k: np.ndarray) -> np.ndarray:
        """Mono 24 kHz prompt ``[samples]`` -> conditioning ``[frames, d_model]``
        (Mimi encoder, then the speaker projection)."""
        ...

    def start_decoder(self) -> DecoderState: ...

    def decode(self, state: DecoderState, latents: np.ndarray) -> np.ndarray:
        """Normalised latents ``[K, latent_dim]`` -> audio ``[K * samples_per_frame]``."""
        ...


class FlowBatch(Protocol):
    """Where a batching runtime keeps the stacked caches of one scheduler's rows: opaque."""


@runtime_checkable
class BatchedRuntime(Protocol):
    """What a runtime adds to advance many sequences in one call (optional).

    Row ``b`` of every call is computed as if it were alone: its own position,
    its own mask, no statistic shared across rows (quantised graphs included).
    A runtime without these is driven one row at a time, round-robin per frame.
    """

    @property
    def batch_unavailable_reason(self) -> str | None:
        """None when the batched calls work; else why not (e.g. a pack built before them)."""
        ...

    def start_batch(self) -> FlowBatch:
        """A holder for the stacked caches of one scheduler's rows."""
        ...

    def step_batch(
        self, batch: FlowBatch, seqs: Sequence[FlowSequence], latents: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """``step`` for each sequence at once: latents ``[B, latent_dim]`` (NaN = BOS)
        -> ``(z [B, cond_dim], eos_logits [B])``."""
        ...

    def sample_latent_batch(
        self, z: np.ndarray, noise: np.ndarray, decode_steps: int
    ) -> np.ndarray:
        """``sample_latent`` for each row: ``z [B, cond_dim]``, ``noise [B, latent_dim]``."""
        ...


@runtime_checkable
class BatchedDecoder(Protocol):
    """What a runtime adds to decode many streams' Mimi frames in one call (optional).

    Row ``b`` is decoded as if it were alone, from its own state: a stream's audio
    never depends on the other rows. A runtime without it decodes one stream a call.
    """

    @property
    def decode_batch_unavailable_reason(self) -> str | None:
        """None when ``decode_batch`` works; else why not (e.g. no batched decoder graph)."""
        ...

    def decode_rows(self, frames: int) -> int:
        """How many streams one call should take at ``frames`` latents each (the fastest)."""
        ...

    def decode_batch(self, states: Sequence[DecoderState], latents: np.ndarray) -> np.ndarray:
        """``decode`` for each state at once: latents ``[B, K, latent_dim]`` -> audio
        ``[B, K * samples_per_frame]``; each state moves on as ``decode`` would move it."""
        ...


@runtime_checkable
class SamplingRuntime(Protocol):
    """What a runtime adds whose FlowLM call also samples the latent (optional).

    Some graphs (the browser pack's ``flow_lm``) take the frame's noise in the call
    that gives its EOS logit. The engine then peeks the frame's noise before the EOS
    rule and consumes it only when the frame is kept, so the noise sequence, and the
    audio for a seed, are those of ``step`` followed by ``sample_latent``. A sampling
    runtime is driven only through these (``engine.rows.SampledCalls``): it need not
    offer ``step``, ``prefill_then_step`` or ``sample_latent``.
    """

    def step_sampled(
        self, seq: FlowSequence, latent: np.ndarray, noise: np.ndarray, decode_steps: int
    ) -> tuple[np.ndarray, float]:
        """``step(latent)`` then ``sample_latent`` from ``noise``: ``(next latent, eos_logit)``."""
        ...

    def prefill_then_step_sampled(
        self,
        seq: FlowSequence,
        embeddings: np.ndarray,
        latent: np.ndarray,
        noise: np.ndarray,
        decode_steps: int,
    ) -> tuple[np.ndarray, float]:
        """``prefill(embeddings)`` then ``step_sampled``."""
        ...


def sampling(runtime: Runtime) -> SamplingRuntime | None:
    """The runtime's sampling steps, or None when it has none."""
    return runtime if isinstance(runtime, SamplingRuntime) else None


def batching(runtime: Runtime) -> BatchedRuntime | None:
    """The runtime's batched calls, or None when it has none (or its pack has none)."""
    if isinstance(runtime, BatchedRuntime) and runtime.batch_unavailable_reason is None:
        return runtime
    return None


def decode_lanes(runtime: Runtime) -> int:
    """Threads that may run the runtime's Mimi decodes of different streams at once: 2
    where it says its decodes may overlap (``parallel_decodes``: ONNX Runtime sessions
    run concurrently), bounded by the cores; else 1."""
    return bound_threads(2) if getattr(runtime, "parallel_decodes", False) is True else 1


def decode_batching(runtime: Runtime) -> BatchedDecoder | None:
    """The runtime's batched Mimi decode, or None when it has none (or its pack has none)."""
    if isinstance(runtime, BatchedDecoder) and runtime.decode_batch_unavailable_reason is None:
        return runtime
    return None
