"""The Python API: load a model once, then synthesize or stream as often as needed.

    from pocketcli import PocketTTS
    tts = PocketTTS.load("path/to/pack")
    audio = tts.synthesize("Hello world.", seed=1)        # float32, 24 kHz
    for frame in tts.stream("A longer text."):            # 80 ms at a time
        play(frame.audio)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from pocketcli.engine.generator import ChunkTrace, Frame, GenerationSettings, generate_frames
from pocketcli.engine.noise import GaussianNoise, NoiseSource
from pocketcli.runtimes.base import Runtime
from pocketcli.text import ChunkPlan, TextRules, load_tokenizer, plan_chunks
from pocketcli.text.chunking import MAX_TOKENS_PER_CHUNK
from pocketcli.text.overlong import split_overlong
from pocketcli.voices.state import VoiceState, load_voice_state


class PocketTTS:
    """A loaded model: runtime, tokenizer and text rules."""

    def __init__(self, runtime: Runtime, tokenizer_path: Path, tokenizer_kind: str) -> None:
        self.runtime = runtime
        self.config = runtime.config
        self.tokenizer = load_tokenizer(tokenizer_path, tokenizer_kind)
        self.rules = TextRules.from_config(self.config.text)

    @classmethod
    def load(cls, pack_dir: str | Path, precision: str = "fp32",
             threads: int | None = None) -> PocketTTS:
        """Loads an ONNX pack (a directory holding ``pack.json``)."""
        from pocketcli.runtimes.onnx import OnnxRuntime

        runtime = OnnxRuntime(pack_dir, precision=precision, threads=threads)
        return cls(runtime, runtime.tokenizer_path, runtime.manifest.tokenizer_kind)

    @property
    def sample_rate(self) -> int:
        return self.config.mimi.sample_rate

    @property
    def samples_per_frame(self) -> int:
        return self.config.mimi.samples_per_frame

    def load_voice(self, path: str | Path) -> VoiceState:
        """Reads a Kyutai voice state (``.safetensors``) and checks it fits this model."""
        voice = load_voice_state(path)
        t = self.config.flow_lm.transformer
        voice.check_fits(t.num_layers, t.kv_heads, t.head_dim)
        return voice

    def plan(self, text: str, max_tokens: int = MAX_TOKENS_PER_CHUNK,
             frames_after_eos: int | None = None) -> list[ChunkPlan]:
        """The chunks, token ids and frame budgets the text will be spoken as.

        Equal to pocket-tts's chunking, except that a chunk it would leave over
        ``max_tokens`` (text without sentence or clause marks) is cut at words.
        """
        rate = self.config.mimi.frame_rate
        plans = plan_chunks(self.tokenizer, text, self.rules, max_tokens, frames_after_eos,
                            frame_rate=rate)
        return split_overlong(self.tokenizer, plans, self.rules, max_tokens, frames_after_eos,
                              rate)

    def stream(
        self,
        text: str,
        voice: VoiceState | None = None,
        *,
        temperature: float | None = None,
        seed: int | None = None,
        noise: NoiseSource | None = None,
        eos_threshold: float | None = None,
        decode_steps: int = 1,
        frames_after_eos: int | None = None,
        max_tokens: int = MAX_TOKENS_PER_CHUNK,
        on_chunk: Callable[[ChunkTrace], None] | None = None,
    ) -> Iterator[Frame]:
        """Yields frames as they are generated. ``noise`` overrides temperature and seed."""
        chunks = self.plan(text, max_tokens, frames_after_eos)
        if noise is None:
            temp = self.config.default_temperature if temperature is None else temperature
            noise = GaussianNoise(temp, seed)
        settings = GenerationSettings(
            eos_threshold=self.config.default_eos_threshold if eos_threshold is None
            else eos_threshold,
            decode_steps=decode_steps,
        )
        return generate_frames(self.runtime, chunks, voice, noise, settings, on_chunk)

    def synthesize(self, text: str, voice: VoiceState | None = None, **kwargs) -> np.ndarray:
        """The whole utterance as float32 samples at ``sample_rate``."""
        frames = [f.audio for f in self.stream(text, voice, **kwargs)]
        if not frames:
            return np.zeros(0, np.float32)
        return np.concatenate(frames)
