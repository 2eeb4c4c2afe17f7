"""One frame of audio and the rules of one chunk, written once for every runtime.

Per text chunk: a fresh copy of the voice state, the text prefill (together
with the first frame's step), then one frame at a time: FlowLM step -> EOS
rule -> host noise -> flow head -> Mimi. ``ChunkRun`` holds those rules;
the scheduler (``pocketcli.engine.scheduler``) drives every run, a frame per
tick, and ``PauseRun`` gives a pause's silence a frame at a time.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from pocketcli.errors import ModelOutputError, WordsUnavailable
from pocketcli.runtimes.base import Runtime
from pocketcli.text import ChunkPlan
from pocketcli.voices.state import VoiceState

if TYPE_CHECKING:
    from pocketcli.words import Word

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
    words: bool = False  # frames carry their word heads' attention (``Frame.attention``)


@dataclass(frozen=True)
class Frame:
    """One 80 ms frame of audio and what produced it (or a piece of a pause)."""

    audio: np.ndarray  # float32 [samples_per_frame]; a pause's last piece is shorter
    chunk_index: int  # -1 for pause frames
    frame_index: int  # within its chunk (or pause)
    latent: np.ndarray | None  # normalised latent [latent_dim]; None in a pause
    eos_logit: float  # NaN in a pause
    # The word heads' logits over the chunk's text [heads, tokens], when words were asked for.
    attention: np.ndarray | None = field(default=None, kw_only=True)
    # The words this frame ends (asked for with SpeakOptions.words).
    words: tuple[Word, ...] = field(default=(), kw_only=True)

    @property
    def is_pause(self) -> bool:
        return self.latent is None


F = TypeVar("F", bound=Frame)


class HeldWords:
    """The words of frames that carry no audio (a time-stretcher held all of it): they
    ride on the next frame that does. One per stream, for ``stream`` and sessions alike."""

    def __init__(self) -> None:
        self.words: tuple[Word, ...] = ()

    def pass_on(self, frame: F) -> F | None:
        """``frame`` with the held words before its own; None (its words held) if empty."""
        if not len(frame.audio):
            self.words += frame.words
            return None
        if not self.words:
            return frame
        words, self.words = self.words + frame.words, ()
        return dataclasses.replace(frame, words=words)


@dataclass
class ChunkTrace:
    """What happened in one chunk (filled as generation goes; for metrics and tests)."""

    plan: ChunkPlan
    eos_logits: list[float]
    frames: int = 0
    finished_on_eos: bool = False


class PauseRun:
    """A pause as exact digital silence, a frame at a time (the last one shorter)."""

    def __init__(self, seconds: float, sample_rate: int, frame_size: int) -> None:
        self.remaining = int(round(seconds * sample_rate))
        self.frame_size = frame_size
        self.index = 0

    @property
    def done(self) -> bool:
        return self.remaining <= 0

    def take(self, most: int) -> list[Frame]:
        """Up to ``most`` of its next frames."""
        frames = []
        while self.remaining > 0 and len(frames) < most:
            n = min(self.frame_size, self.remaining)
            frames.append(Frame(np.zeros(n, np.float32), -1, self.index, None, float("nan")))
            self.remaining -= n
            self.index += 1
        return frames


class ChunkRun:
    """One chunk of one stream, advanced a frame at a time.

    The per-frame rules live here once: the EOS rule, the NaN check, Mimi's
    grouping (the first frame alone, then pairs) and the fade-in. The model calls
    themselves (the text prefill riding on the first frame) are made by the
    scheduler's row adapter (``pocketcli.engine.rows``).
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
        self._attention: list[np.ndarray | None] = []
        self._watch = watch_words(runtime, self.seq, len(plan.token_ids), settings.words)
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
        self._attention.append(self._watch(self.seq) if self._watch else None)
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
            yield Frame(
                piece,
                self.chunk_index,
                i,
                self._latents[i],
                self._eos_logits[i],
                attention=self._attention[i],
            )


def watch_words(
    runtime: Runtime, seq: object, n_tokens: int, wanted: bool
) -> Callable[[object], np.ndarray | None] | None:
    """When ``wanted``: has ``runtime`` keep the word heads' attention over the chunk's
    ``n_tokens`` of text; returns how to read it after a call (None: not wanted)."""
    if not wanted:
        return None
    watch = getattr(runtime, "watch_text", None)
    if watch is None:
        raise WordsUnavailable(f"cannot time words: the {runtime.name} runtime does not give them")
    watch(seq, n_tokens)
    return runtime.text_attention  # type: ignore[attr-defined]
