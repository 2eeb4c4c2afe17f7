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
from pocketcli.engine.noise import NoiseSource, peekable
from pocketcli.errors import ModelOutputError
from pocketcli.normalize.timeline import Pause
from pocketcli.runtimes.base import Runtime, SamplingRuntime, sampling
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
    if sampling(runtime) is not None:
        noise = peekable(noise)  # one lookahead for all chunks: the same noise sequence
    for item in chunks:
        if isinstance(item, Pause):
            yield from silence_frames(
                item.seconds, runtime.config.mimi.sample_rate, runtime.config.mimi.samples_per_frame
            )
            continue
        trace = ChunkTrace(item, [])
        if on_chunk is not None:
            on_chunk(trace)
        yield from _generate_chunk(runtime, index, item, voice, noise, settings, trace)
        index += 1


def silence_frames(seconds: float, sample_rate: int, frame_size: int) -> Iterator[Frame]:
    remaining = int(round(seconds * sample_rate))
    i = 0
    while remaining > 0:
        n = min(frame_size, remaining)
        yield Frame(np.zeros(n, np.float32), -1, i, None, float("nan"))
        remaining -= n
        i += 1


class ChunkRun:
    """One chunk of one stream, advanced a frame at a time.

    The per-frame rules live here once: the text prefill riding on the first
    frame, the EOS rule, the NaN check, Mimi's grouping (the first frame alone,
    then pairs) and the fade-in. ``generate_frames`` drives one run in the
    caller's thread; the scheduler (``pocketcli.engine.scheduler``) drives many,
    one frame each per tick.
    """

    def __init__(
        self,
        runtime: Runtime,
        chunk_index: int,
        plan: ChunkPlan,
        voice: VoiceState | None,
        settings: GenerationSettings,
        trace: ChunkTrace,
    ) -> None:
        self.chunk_index = chunk_index
        self.plan = plan
        self.settings = settings
        self.trace = trace
        self.latent_dim = runtime.config.flow_lm.latent_dim
        self.frame_size = runtime.config.mimi.samples_per_frame
        sample_rate = runtime.config.mimi.sample_rate
        self._fade = np.linspace(0.0, 1.0, int(sample_rate * FADE_IN_SECONDS), dtype=np.float32)
        self.seq = runtime.start_sequence(voice, len(plan.token_ids) + plan.max_frames)
        self.text = runtime.embed_text(np.asarray(plan.token_ids, np.int64))
        self.decoder = runtime.start_decoder()
        self.step = 0
        self.latent = np.full(self.latent_dim, np.nan, np.float32)  # NaN = BOS
        self.eos_step: int | None = None
        self.finished = False
        self._latents: list[np.ndarray] = []
        self._eos_logits: list[float] = []
        self._pending: list[np.ndarray] = []

    @property
    def first(self) -> bool:
        """The next frame is the chunk's first (its step carries the text prefill)."""
        return self.step == 0

    def wants_frame(self) -> bool:
        if self.finished or self.step >= self.plan.max_frames:
            return False
        return self.eos_step is None or self.step < self.eos_step + self.plan.frames_after_eos

    def run_step(self, runtime: Runtime) -> tuple[np.ndarray, float]:
        """This frame's FlowLM call on its own (a batch of one row)."""
        if self.first:  # the text prefill and the BOS frame in one call
            return runtime.prefill_then_step(self.seq, self.text, self.latent)
        return runtime.step(self.seq, self.latent)

    def run_sampled_step(
        self, runtime: SamplingRuntime, noise: np.ndarray, decode_steps: int
    ) -> tuple[np.ndarray, float]:
        """This frame's FlowLM call where it also samples the latent: ``(latent, eos)``."""
        if self.first:
            return runtime.prefill_then_step_sampled(
                self.seq, self.text, self.latent, noise, decode_steps
            )
        return runtime.step_sampled(self.seq, self.latent, noise, decode_steps)

    def take_output(self, eos_logit: float) -> bool:
        """Applies the EOS rule to this frame's logit: False when the chunk ends here."""
        self.trace.eos_logits.append(eos_logit)
        if (
            eos_logit > self.settings.eos_threshold
            and self.eos_step is None
            and self.step >= MIN_FRAMES_BEFORE_EOS
        ):
            self.eos_step = self.step
            self.trace.finished_on_eos = True
        if self.eos_step is not None and self.step >= self.eos_step + self.plan.frames_after_eos:
            self.finished = True
            return False
        return True

    def take_latent(self, latent: np.ndarray, eos_logit: float) -> np.ndarray | None:
        """Records this frame's latent; returns latents ready for Mimi, if any."""
        if not (np.isfinite(latent).all() and np.isfinite(eos_logit)):
            raise ModelOutputError(
                "the model produced NaN or infinite values: the voice or the model pack "
                "is broken (or the temperature is far too high)"
            )
        self.latent = latent
        self._latents.append(latent)
        self._eos_logits.append(eos_logit)
        self._pending.append(latent)
        first = self.step == 0
        self.step += 1
        if first or len(self._pending) == DECODE_BATCH:
            return self.flush()
        return None

    def flush(self) -> np.ndarray | None:
        """The latents not yet sent to Mimi (at the chunk's end)."""
        if not self._pending:
            return None
        batch = np.stack(self._pending)
        self._pending = []
        return batch

    def frames(self, audio: np.ndarray) -> Iterator[Frame]:
        """Decoded audio (in order) as this chunk's frames; the first is faded in."""
        for start in range(0, audio.size, self.frame_size):
            piece = audio[start : start + self.frame_size]
            i = self.trace.frames
            if i == 0:
                piece = piece.copy()
                piece[: self._fade.size] *= self._fade[: piece.size]
            self.trace.frames += 1
            yield Frame(piece, self.chunk_index, i, self._latents[i], self._eos_logits[i])


def _generate_chunk(
    runtime: Runtime,
    chunk_index: int,
    plan: ChunkPlan,
    voice: VoiceState | None,
    noise: NoiseSource,
    settings: GenerationSettings,
    trace: ChunkTrace,
) -> Iterator[Frame]:
    run = ChunkRun(runtime, chunk_index, plan, voice, settings, trace)
    pipeline = DecoderPipeline(
        lambda lat: runtime.decode(run.decoder, lat), settings.threaded_decoder
    )
    sampler = sampling(runtime)
    ahead = peekable(noise) if sampler is not None else None  # generate_frames made it one
    try:
        while run.wants_frame():
            first = run.first
            if sampler is not None and ahead is not None:
                x0 = ahead.peek(run.latent_dim)
                latent, eos_logit = run.run_sampled_step(sampler, x0, settings.decode_steps)
                if not run.take_output(eos_logit):
                    break
                ahead(run.latent_dim)  # the peeked vector: this frame's
            else:
                z, eos_logit = run.run_step(runtime)
                if not run.take_output(eos_logit):
                    break
                latent = runtime.sample_latent(z, noise(run.latent_dim), settings.decode_steps)
            ready = run.take_latent(latent, eos_logit)
            if ready is not None:
                pipeline.submit(ready)
            for audio in pipeline.ready(wait_for_first=first):
                yield from run.frames(audio)
        rest = run.flush()
        if rest is not None:
            pipeline.submit(rest)
        for audio in pipeline.drain():
            yield from run.frames(audio)
    finally:
        pipeline.close()
