"""The one place the server talks to the library: open a model, find voices, make frames.

Everything here runs on worker threads (loading, voice files, generation);
the request handlers never call the library directly.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from pocketcli.engine.scheduler import SchedulerStats
from pocketcli.frontends import logs
from pocketcli.options import SpeakOptions

if TYPE_CHECKING:
    from pocketcli.api import PocketTTS
    from pocketcli.options import ModelRequest
    from pocketcli.voices.state import VoiceState
    from pocketcli.words.align import Word


def log_warning(message: str) -> None:
    """A warning of the library's (a voice file's ignored tensors, ...) as one line of the
    server's log, never as a raw Python ``warnings`` line with its source."""
    logs.logger().warning("warning", extra={"warning": message})


def carried(audio: np.ndarray, words: Sequence[Word]) -> np.ndarray:
    """A frame's samples with the words it ends riding on them (``TimedAudio``: an array
    like any other, and ``.words``), so one item of a job's bounded queue carries both."""
    if not words:
        return audio
    from pocketcli.words import TimedAudio

    return TimedAudio.of(audio, list(words))


def words_of(audio: np.ndarray) -> tuple[Word, ...]:
    """The words a frame's samples carry (``carried``; none for plain samples)."""
    return getattr(audio, "words", ())


@dataclass
class Backend:
    """An opened model with its default voice."""

    tts: PocketTTS
    default_voice: VoiceState | None
    default_voice_name: str
    _builtin_cache: dict[str, VoiceState] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def sample_rate(self) -> int:
        return self.tts.sample_rate

    @property
    def language(self) -> str | None:
        """The pack's language (None: it does not say, e.g. a custom config)."""
        return self.tts._pack_language

    # -- generation ---------------------------------------------------------
    def frames(
        self,
        text: str,
        voice: VoiceState | None,
        options: SpeakOptions,
        on_warning: Callable[[str], None] | None = None,
    ) -> Iterator[np.ndarray]:
        """Audio frames as they are generated (with ``options.output_chain``, through
        the chain's causal filters, as ``pockettts tts -o -`` streams them); with
        ``options.words`` a frame that ends words carries them (``carried``)."""
        # A stream of the model's scheduler: concurrent requests (and sessions) are rows
        # of one batched call per frame.
        with closing(self.tts.stream(text, voice, options, on_warning=on_warning)) as frames:
            for frame in frames:
                yield carried(frame.audio, frame.words)

    @property
    def words_unavailable(self) -> str | None:
        """Why this model cannot time words (one line), or None when it can."""
        from pocketcli.words import WordsUnavailable

        try:
            self.tts._check_words()
        except WordsUnavailable as exc:
            return str(exc)
        return None

    def engine_stats(self) -> SchedulerStats:
        """The engine scheduler's figures (ticks by batch size, frames)."""
        return self.tts._scheduler.stats

    def engine_streams(self) -> int:
        """Streams the engine holds now (0: it makes nothing for anyone)."""
        return self.tts._scheduler.active_streams

    def clone(self, samples: np.ndarray, sample_rate: int, on_warning: Callable[[str], None]):
        with self.tts._generation_lock:
            return self.tts.voices.clone(samples, sample_rate, on_warning=on_warning)

    @property
    def cloning_unavailable(self) -> str | None:
        if self.tts.voices.cloning_available:
            return None
        from pocketcli.voices.cloning import unavailable_message

        return unavailable_message(self.tts.runtime.cloning_unavailable_reason or "")

    def load_voice_file(self, path: Path) -> VoiceState:
        return self.tts.voices.load(path, on_warning=log_warning)

    # -- built-in voices ----------------------------------------------------
    def builtin_names(self) -> tuple[str, ...]:
        """Names a request may use: the pack's own voice files, and the catalogue's
        voices for the model's language (fetched at pinned revisions on first use)."""
        spec, request = self.tts._spec, self.tts._request
        if spec is None:
            return ()
        names: set[str] = set()
        if request.model_dir is not None and self.tts._pack_dir is not None:
            names.update(spec.pack_voices(self.tts._pack_dir))
        if self.language is not None and request.config is None:
            names.update(spec.voices(self.language))
        return tuple(sorted(names))

    def builtin_voice(self, name: str) -> VoiceState:
        """A built-in voice by (canonical) name, one of ``builtin_names()``: loaded once."""
        with self._lock:
            cached = self._builtin_cache.get(name)
        if cached is not None:
            return cached
        state = self.tts.voices.get(name, on_warning=log_warning)
        with self._lock:
            self._builtin_cache[name] = state
        return state


def load_backend(request: ModelRequest, voice: str | None, voice_file: Path | None) -> Backend:
    """Opens the model and its default voice, by the library's one rule
    (``tts.voices.choose``: a voice file, else a built-in name, else the
    model's own default), as ``pockettts tts`` chooses."""
    from dataclasses import replace

    from pocketcli.api import open_request

    tts = open_request(replace(request, progress=False))
    chosen = tts.voices.choose(voice, voice_file, on_warning=log_warning)
    return Backend(tts, chosen.state, chosen.name)
