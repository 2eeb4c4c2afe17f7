"""The Python API: load a model once, then synthesize or stream as often as needed.

from pocketcli import PocketTTS
tts = PocketTTS.load("path/to/pack")
audio = tts.synthesize("Hello world.", seed=1)        # float32, 24 kHz
for frame in tts.stream("A longer text."):            # 80 ms at a time
    play(frame.audio)
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from pocketcli.engine.generator import ChunkTrace, Frame, GenerationSettings, generate_frames
from pocketcli.engine.noise import GaussianNoise, NoiseSource
from pocketcli.normalize import Pause, Speech, normalize_text, parse_markup
from pocketcli.options import SpeakOptions
from pocketcli.runtimes.base import Runtime
from pocketcli.text import ChunkPlan, EmptyTextError, TextRules, load_tokenizer, plan_chunks
from pocketcli.text.chunking import MAX_TOKENS_PER_CHUNK
from pocketcli.text.overlong import split_overlong
from pocketcli.voices import cloning
from pocketcli.voices.files import load_voice_file, save_voice_file
from pocketcli.voices.prompt import VoiceWarning, load_prompt, prepare_prompt
from pocketcli.voices.state import VoiceState

if TYPE_CHECKING:
    from pocketcli.config import ModelConfig
    from pocketcli.runtimes.coreml.predictor import PredictorFactory


class PocketTTS:
    """A loaded model: runtime, tokenizer and text rules."""

    def __init__(
        self, runtime: Runtime, tokenizer_path: Path, tokenizer_kind: str, language: str = "english"
    ) -> None:
        self.runtime = runtime
        self.config = runtime.config
        self.tokenizer = load_tokenizer(tokenizer_path, tokenizer_kind)
        self.rules = TextRules.from_config(self.config.text)
        self.language = language

    @classmethod
    def load(
        cls, pack_dir: str | Path, precision: str = "fp32", threads: int | None = None
    ) -> PocketTTS:
        """Loads an ONNX pack (a directory holding ``pack.json``)."""
        from pocketcli.runtimes.onnx import OnnxRuntime

        runtime = OnnxRuntime(pack_dir, precision=precision, threads=threads)
        language = str(runtime.manifest.source.get("language") or "english")
        return cls(runtime, runtime.tokenizer_path, runtime.manifest.tokenizer_kind, language)

    @classmethod
    def load_coreml(
        cls,
        pack_dir: str | Path,
        precision: str = "fp16",
        placement: str = "gpu",
        compute_units: str = "default",
        predictor_factory: PredictorFactory | None = None,
        config: ModelConfig | None = None,
    ) -> PocketTTS:
        """Loads a FluidAudio CoreML pack (a ``v2.1/<lang>/`` directory; macOS).

        ``precision`` fp16|int8 picks the FlowLM file, ``placement`` gpu|ane
        the model set, ``compute_units`` a FluidAudio preset (default, no-ane,
        all, cpu-gpu, cpu-ane, cpu-only). ``config`` defaults to the bundled
        config named like the pack. The flow decoder's 8 steps are baked in,
        so ``decode_steps`` of ``stream``/``synthesize`` has no effect.
        """
        from pocketcli.runtimes.coreml import CoreMLRuntime

        runtime = CoreMLRuntime(
            pack_dir, precision, placement, compute_units, predictor_factory, config=config
        )
        return cls(runtime, runtime.tokenizer_path, runtime.tokenizer_kind, runtime.language)

    @property
    def sample_rate(self) -> int:
        return self.config.mimi.sample_rate

    @property
    def samples_per_frame(self) -> int:
        return self.config.mimi.samples_per_frame

    def load_voice(self, path: str | Path) -> VoiceState:
        """Reads a voice file and checks it fits this model: a Kyutai voice state
        (``.safetensors``, as ``pocket-tts export-voice`` writes) or FluidAudio's
        ``.bin`` conditioning (prefilled here, so it costs one FlowLM call)."""
        return load_voice_file(path, self.runtime)

    @property
    def supports_voice_cloning(self) -> bool:
        """False for packs built from Kyutai's weights without voice cloning."""
        return self.runtime.cloning_unavailable_reason is None

    def clone_voice(
        self,
        audio: str | Path | np.ndarray,
        sample_rate: int | None = None,
        *,
        on_warning: Callable[[str], None] | None = None,
    ) -> VoiceState:
        """A voice state cloned from a recording, as pocket-tts's
        ``get_state_for_audio_prompt`` computes it.

        ``audio`` is a file (WAV, FLAC, OGG/Vorbis, Opus, MP3; M4A/AAC with the
        ``m4a`` extra) or samples ``[n]`` / ``[n, channels]`` at ``sample_rate``.
        At most the first 30 s are used, trailing silence is trimmed; under 1 s,
        silence and NaN/inf samples raise ``PromptError``. Notices (audio cut,
        clipping) go to ``on_warning``, else to ``warnings`` as ``VoiceWarning``.
        The voice keeps its conditioning, so ``save_voice`` can write ``.bin`` too.
        A pack without voice-cloning weights raises ``VoiceCloningUnavailable``.
        """
        cloning.require_cloning(self.runtime)
        notes: list[str] = []
        warn = on_warning or notes.append
        if isinstance(audio, str | Path):
            if sample_rate is not None:
                raise ValueError("sample_rate is for sample arrays; a file has its own")
            prompt = load_prompt(audio, self.sample_rate, warn)
        else:
            if sample_rate is None:
                raise ValueError("pass the sample_rate of the samples")
            prompt = prepare_prompt(audio, sample_rate, self.sample_rate, warn)
        voice = cloning.clone_voice(self.runtime, prompt)
        _warn_caller(notes)
        return voice

    def save_voice(
        self,
        voice: VoiceState,
        path: str | Path,
        *,
        on_warning: Callable[[str], None] | None = None,
    ) -> None:
        """Writes ``voice`` atomically as ``.safetensors`` (Kyutai voice state) or
        ``.bin`` (FluidAudio: needs a cloned voice; cut to 125 frames with a notice)."""
        notes: list[str] = []
        save_voice_file(voice, path, on_warning or notes.append)
        _warn_caller(notes)

    def plan(
        self, text: str, max_tokens: int = MAX_TOKENS_PER_CHUNK, frames_after_eos: int | None = None
    ) -> list[ChunkPlan]:
        """The chunks, token ids and frame budgets the text will be spoken as.

        Equal to pocket-tts's chunking, except that a chunk it would leave over
        ``max_tokens`` (text without sentence or clause marks) is cut at words.
        """
        rate = self.config.mimi.frame_rate
        plans = plan_chunks(
            self.tokenizer, text, self.rules, max_tokens, frames_after_eos, frame_rate=rate
        )
        return split_overlong(self.tokenizer, plans, self.rules, max_tokens, frames_after_eos, rate)

    def script(
        self,
        text: str,
        *,
        normalize: bool = True,
        ssml: bool | None = None,
        max_tokens: int = MAX_TOKENS_PER_CHUNK,
        frames_after_eos: int | None = None,
        on_warning: Callable[[str], None] | None = None,
    ) -> list[ChunkPlan | Pause]:
        """What will be spoken, in order: chunks, and pauses from markup.

        With ``normalize`` off the text goes straight to pocket-tts's chunking
        (no markup, no number reading), exactly as the reference would take it.
        """
        if not normalize:
            return list(self.plan(text, max_tokens, frames_after_eos))
        items: list[ChunkPlan | Pause] = []
        for part in parse_markup(text, ssml=ssml, language=self.language, on_warning=on_warning):
            if isinstance(part, Speech):
                spoken = normalize_text(part.text, self.language)
                if spoken.strip():
                    items.extend(self.plan(spoken, max_tokens, frames_after_eos))
            elif part.seconds > 0:
                items.append(part)
        if not items:
            raise EmptyTextError("nothing to say once the text is read out (only symbols?)")
        return items

    def stream(
        self,
        text: str,
        voice: VoiceState | None = None,
        options: SpeakOptions | None = None,
        *,
        noise: NoiseSource | None = None,
        on_warning: Callable[[str], None] | None = None,
        on_chunk: Callable[[ChunkTrace], None] | None = None,
        **overrides: Any,
    ) -> Iterator[Frame]:
        """Yields frames as they are generated (the model's raw audio).

        ``options`` is a ``SpeakOptions``; keyword ``overrides`` (``seed=1``,
        ``temperature=0.7``...) change single fields of it. ``noise``
        replaces the seeded Gaussian noise (tests inject the oracle's).
        """
        opts = (options or SpeakOptions()).with_(**overrides)
        chunks = self.script(
            text,
            normalize=opts.normalize,
            ssml=opts.ssml,
            max_tokens=opts.max_tokens,
            frames_after_eos=opts.frames_after_eos,
            on_warning=on_warning,
        )
        if noise is None:
            temp = self.config.default_temperature if opts.temperature is None else opts.temperature
            noise = GaussianNoise(temp, opts.seed, opts.noise_clamp)
        settings = GenerationSettings(
            eos_threshold=self.config.default_eos_threshold
            if opts.eos_threshold is None
            else opts.eos_threshold,
            decode_steps=opts.decode_steps,
        )
        return generate_frames(self.runtime, chunks, voice, noise, settings, on_chunk)

    def synthesize(
        self,
        text: str,
        voice: VoiceState | None = None,
        options: SpeakOptions | None = None,
        **kwargs: Any,
    ) -> np.ndarray:
        """The whole utterance as float32 samples at ``sample_rate`` (raw model audio)."""
        frames = [f.audio for f in self.stream(text, voice, options, **kwargs)]
        if not frames:
            return np.zeros(0, np.float32)
        return np.concatenate(frames)


def _warn_caller(notes: list[str]) -> None:
    """Voice notices as Python warnings pointing at the caller of the API method."""
    for note in notes:
        warnings.warn(note, VoiceWarning, stacklevel=3)
