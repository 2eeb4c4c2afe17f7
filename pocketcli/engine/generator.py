"""The generation loop, written once for every runtime.

Per text chunk: a fresh copy of the voice state, the text prefill (together
with the first frame's step), then one frame at a time: FlowLM step -> EOS
rule -> host noise -> flow head -> Mimi.
Frames are yielded as soon as they are decoded (1920 samples each), so a
caller can stream audio while the rest is still being generated.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from pocketcli.engine.decoder_pipeline import DecoderPipeline
from pocketcli.engine.noise import NoiseSource
from pocketcli.errors import ModelOutputError
from pocketcli.normalize.timeline import Pause
from pocketcli.runtimes.base import Runtime
from pocketcli.text import ChunkPlan
from pocketcli.voices.state import VoiceState

# The reference ignores EOS during the first frames of every chunk.
MIN_FRAMES_BEFORE_EOS = 6
# The first 5 ms of every chunk are faded in: a fresh Mimi state clicks.
FADE_IN_SECONDS = 0.005
# After a chunk's first frame (decoded alone, for the time to first audio), Mimi
# decodes frames in pairs: about 10% less work per frame on ONNX Runtime, and a
# fixed grouping, so the same seed still gives the same samples on every run.
DECODE_BATCH = 2


@dataclass(frozen=True)
class GenerationSettings:
    eos_threshold: float
    decode_steps: int = 1
    threaded_decoder: bool = True


@dataclass(frozen=True)
class Frame:
    """One 80 ms frame of audio and what produced it (or a piece of a pause)."""

    audio: np.ndarray  # float32 [samples_per_frame]; a pause's last piece is shorter
    chunk_index: int  # -1 for pause frames
    frame_index: int  # within its chunk (or pause)
    latent: np.ndarray | None  # normalised latent [latent_dim]; None in a pause
    eos_logit: float  # NaN in a pause

    @property
    def is_pause(self) -> bool:
        return self.latent is None


@dataclass
class ChunkTrace:
    """What happened in one chunk (filled as generation goes; for metrics and tests)."""

    plan: ChunkPlan
    eos_logits: list[float]
    frames: int = 0
    finished_on_eos: bool = False


def generate_frames(
    runtime: Runtime,
    chunks: Iterable[ChunkPlan | Pause],
    voice: VoiceState | None,
    noise: NoiseSource,
    settings: GenerationSettings,
    on_chunk: Callable[[ChunkTrace], None] | None = None,
) -> Iterator[Frame]:
    """Frames for each chunk in order; a ``Pause`` becomes exact digital silence."""
    index = 0
    for item in chunks:
        if isinstance(item, Pause):
            yield from _silence(
                item.seconds, runtime.config.mimi.sample_rate, runtime.config.mimi.samples_per_frame
            )
            continue
        trace = ChunkTrace(item, [])
        if on_chunk is not None:
            on_chunk(trace)
        yield from _generate_chunk(runtime, index, item, voice, noise, settings, trace)
        index += 1


def _silence(seconds: float, sample_rate: int, frame_size: int) -> Iterator[Frame]:
    remaining = int(round(seconds * sample_rate))
    i = 0
    while remaining > 0:
        n = min(frame_size, remaining)
        yield Frame(np.zeros(n, np.float32), -1, i, None, float("nan"))
        remaining -= n
        i += 1


def _generate_chunk(
    runtime: Runtime,
    chunk_index: int,
    plan: ChunkPlan,
    voice: VoiceState | None,
    noise: NoiseSource,
    settings: GenerationSettings,
    trace: ChunkTrace,
) -> Iterator[Frame]:
    latent_dim = runtime.config.flow_lm.latent_dim
    sample_rate = runtime.config.mimi.sample_rate
    fade = np.linspace(0.0, 1.0, int(sample_rate * FADE_IN_SECONDS), dtype=np.float32)

    seq = runtime.start_sequence(voice, len(plan.token_ids) + plan.max_frames)
    text = runtime.embed_text(np.asarray(plan.token_ids, np.int64))
    decoder_state = runtime.start_decoder()
    pipeline = DecoderPipeline(
        lambda lat: runtime.decode(decoder_state, lat), settings.threaded_decoder
    )
    frame_size = runtime.config.mimi.samples_per_frame
    latents: list[np.ndarray] = []
    eos_logits: list[float] = []
    pending: list[np.ndarray] = []

    def frames(audio: np.ndarray) -> Iterator[Frame]:
        for start in range(0, audio.size, frame_size):
            piece = audio[start : start + frame_size]
            i = trace.frames
            if i == 0:
                piece = piece.copy()
                piece[: fade.size] *= fade[: piece.size]
            trace.frames += 1
            yield Frame(piece, chunk_index, i, latents[i], eos_logits[i])

    try:
        latent = np.full(latent_dim, np.nan, np.float32)  # NaN = BOS
        eos_step: int | None = None
        for step in range(plan.max_frames):
            if eos_step is not None and step >= eos_step + plan.frames_after_eos:
                break
            if step == 0:  # the text prefill and the BOS frame in one call
                z, eos_logit = runtime.prefill_then_step(seq, text, latent)
            else:
                z, eos_logit = runtime.step(seq, latent)
            trace.eos_logits.append(eos_logit)
            if (
                eos_logit > settings.eos_threshold
                and eos_step is None
                and step >= MIN_FRAMES_BEFORE_EOS
            ):
                eos_step = step
                trace.finished_on_eos = True
            if eos_step is not None and step >= eos_step + plan.frames_after_eos:
                break
            latent = runtime.sample_latent(z, noise(latent_dim), settings.decode_steps)
            if not (np.isfinite(latent).all() and np.isfinite(eos_logit)):
                raise ModelOutputError(
                    "the model produced NaN or infinite values: the voice or the model pack "
                    "is broken (or the temperature is far too high)"
                )
            latents.append(latent)
            eos_logits.append(eos_logit)
            pending.append(latent)
            if step == 0 or len(pending) == DECODE_BATCH:
                pipeline.submit(np.stack(pending))
                pending = []
            for audio in pipeline.ready(wait_for_first=(step == 0)):
                yield from frames(audio)
        if pending:
            pipeline.submit(np.stack(pending))
        for audio in pipeline.drain():
            yield from frames(audio)
    finally:
        pipeline.close()
