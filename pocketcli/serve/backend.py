"""The one place the server talks to the library: load a model, find voices, make frames.

Everything here runs on worker threads (loading, voice files, generation);
the request handlers never call the library directly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from pocketcli.options import SpeakOptions

if TYPE_CHECKING:
    from pocketcli.api import PocketTTS
    from pocketcli.cli.model_options import ModelChoice
    from pocketcli.voices.state import VoiceState


@dataclass
class Backend:
    """A loaded model with its default voice, and how to resolve built-in voice names."""

    tts: PocketTTS
    default_voice: VoiceState | None
    default_voice_name: str
    choice: ModelChoice | None = None
    language: str | None = None  # the pack's language, when it says
    model_id: str = "pockettts"
    _builtin_cache: dict[str, VoiceState] = field(default_factory=dict)

    @property
    def sample_rate(self) -> int:
        return self.tts.sample_rate

    @property
    def frame_seconds(self) -> float:
        return self.tts.samples_per_frame / self.tts.sample_rate

    # -- generation ---------------------------------------------------------
    def frames(
        self,
        text: str,
        voice: VoiceState | None,
        options: SpeakOptions,
        on_warning: Callable[[str], None] | None = None,
    ) -> Iterator[np.ndarray]:
        """Audio frames as they are generated, through the output chain's causal
        filters when ``options.output_chain`` (as ``pockettts tts -o -`` streams)."""
        from pocketcli.audio.postprocess import OutputChain

        chain = OutputChain(self.sample_rate) if options.output_chain else None
        with closing(self.tts.stream(text, voice, options, on_warning=on_warning)) as frames:
            for frame in frames:
                yield chain.process(frame.audio) if chain is not None else frame.audio

    def clone(self, samples: np.ndarray, sample_rate: int, on_warning: Callable[[str], None]):
        return self.tts.clone_voice(samples, sample_rate, on_warning=on_warning)

    @property
    def cloning_unavailable(self) -> str | None:
        if self.tts.supports_voice_cloning:
            return None
        from pocketcli.voices.cloning import unavailable_message

        return unavailable_message(self.tts.runtime.cloning_unavailable_reason or "")

    def load_voice_file(self, path: Path) -> VoiceState:
        return self.tts.load_voice(path)

    # -- built-in voices ----------------------------------------------------
    def builtin_names(self) -> tuple[str, ...]:
        """Names a request may use: the pack's own voice files, and the catalog's
        voices for the model's language (fetched at pinned revisions on first use)."""
        from pocketcli import store

        names: set[str] = set()
        choice = self.choice
        if choice is None:
            return ()
        if choice.model_dir is not None:
            folder = choice.model_dir / "voices"
            if folder.is_dir():
                names.update(p.stem for p in folder.glob("*.safetensors") if p.is_file())
        if choice.config is None and (choice.model_dir is None or self.language is not None):
            names.update(store.known_voices(self.language or choice.language or "english"))
        return tuple(sorted(names))

    def builtin_voice(self, name: str) -> VoiceState:
        """A built-in voice by (canonical) name; loaded once, then kept."""
        from pocketcli.cli.model_options import resolve_named_voice

        cached = self._builtin_cache.get(name)
        if cached is not None:
            return cached
        assert self.choice is not None
        state = self.tts.load_voice(resolve_named_voice(self.choice, name, self.language))
        self._builtin_cache[name] = state
        return state


def load_backend(
    choice: ModelChoice, voice: str | None, voice_file: Path | None, quiet: bool = True
) -> Backend:
    """Loads the model and its default voice as ``pockettts tts`` would."""
    from pocketcli.cli.model_options import _pack_language, choose_voice, load_model

    tts = load_model(choice, quiet=quiet)
    chosen = choose_voice(tts, choice, voice, voice_file)
    language = _pack_language(tts) or (choice.language if choice.model_dir is None else None)
    return Backend(tts, chosen.state, chosen.name, choice, language)
