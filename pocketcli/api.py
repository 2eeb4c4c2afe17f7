"""The Python API: open a model once, then synthesize or stream as often as needed.

from pocketcli import PocketTTS, SpeakOptions
tts = PocketTTS.open(language="spanish", precision="int8")   # fetched and built on first use
voice = tts.voices.get("lola")                               # a built-in name, or a voice file
audio = tts.synthesize("Hola.", voice, SpeakOptions(seed=1))  # float32, 24 kHz
for frame in tts.stream("Un texto más largo.", voice):      # 80 ms at a time
    play(frame.audio)

``synthesize`` gives exactly what ``pockettts tts`` writes for the same options
(FluidAudio's output chain included; ``SpeakOptions(output_chain=False)`` for
the model's raw audio).
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from pocketcli import defaults
from pocketcli.audio.postprocess import OutputChain, peak_normalize
from pocketcli.audio.stretch import Stretcher
from pocketcli.engine.chunk import ChunkTrace, Frame, GenerationSettings, HeldWords
from pocketcli.engine.noise import GaussianNoise, NoiseSource
from pocketcli.engine.scheduler import Mark, Scheduler, StreamHandle
from pocketcli.errors import FieldError, OptionsError
from pocketcli.normalize import Pause, Speech, normalize_text, parse_markup
from pocketcli.options import AUTO_RUNTIME, DEFAULT_LANGUAGE, ModelRequest, SpeakOptions
from pocketcli.runtimes import registry
from pocketcli.runtimes.base import Runtime
from pocketcli.runtimes.registry import LoadedModel, RuntimeSpec
from pocketcli.text import ChunkPlan, EmptyTextError, TextRules, load_tokenizer, plan_chunks
from pocketcli.text.chunking import MAX_TOKENS_PER_CHUNK
from pocketcli.text.overlong import split_overlong
from pocketcli.text.scripts import nothing_to_say
from pocketcli.voices import cloning
from pocketcli.voices.files import load_voice_file, save_voice_file
from pocketcli.voices.prompt import VoiceWarning, load_prompt, prepare_prompt
from pocketcli.voices.state import VoiceState

if TYPE_CHECKING:
    from pocketcli.session import Session
    from pocketcli.words.source import SpokenParts
    from pocketcli.words.stream import SessionWords


class PocketTTS:
    """A loaded model: runtime, tokenizer and text rules."""

    def __init__(
        self,
        runtime: Runtime,
        tokenizer_path: Path,
        tokenizer_kind: str,
        language: str = DEFAULT_LANGUAGE,
        *,
        spec: RuntimeSpec | None = None,
        request: ModelRequest | None = None,
        pack_dir: Path | None = None,
        pack_language: str | None = None,
    ) -> None:
        self.runtime = runtime
        self.language = language
        # Internal (pocketcli's own front ends, batch, bench and tests read these):
        self._config = runtime.config
        self._tokenizer = load_tokenizer(tokenizer_path, tokenizer_kind)
        self._rules = TextRules.from_config(self._config.text)
        # The scheduler that speaks many streams of this model at once (sessions,
        # synthesize_many, batch --streams, the server); made on first use.
        self._made_scheduler: Scheduler | None = None
        self._scheduler_lock = threading.Lock()
        # Only for what must be serial (the server's voice clones); generation never
        # takes it: concurrent streams are rows of the scheduler's batches.
        self._generation_lock = threading.Lock()
        # How the model was opened: what voice lookups ask the runtime's spec.
        self._spec = spec
        self._request = request or ModelRequest()
        self._pack_dir = pack_dir
        self._pack_language = pack_language  # None: the pack does not say (custom config)
        self.voices = Voices(self)

    @classmethod
    def open(
        cls,
        language: str | None = None,
        *,
        model_dir: str | Path | None = None,
        config: str | None = None,
        runtime: str = AUTO_RUNTIME,
        precision: str | None = None,
        placement: str | None = None,
        compute_units: str | None = None,
        offline: bool = False,
        progress: bool = False,
        threads: int | None = None,
    ) -> PocketTTS:
        """Opens a model the way ``pockettts tts`` does: a language's model from
        the store (fetched and built on first use), a local pack (``model_dir``)
        or a Kyutai config YAML (``config``: path, https:// or hf://).

        ``runtime`` is ``auto`` (CoreML on a Mac that has it, else ONNX) or a
        registered runtime's name (``pocketcli.runtimes.registry``: ``onnx`` for an
        ONNX pack, KevinAHM bundle or browser pack, ``coreml`` for a FluidAudio
        CoreML pack, whose 8 flow-decoder steps are baked in); ``precision``,
        ``placement`` and ``compute_units`` default to the runtime's own. Names are
        case-insensitive. ``offline`` uses the cache only; ``progress`` shows
        downloads and builds on stderr. Bad names raise ``UnknownNameError``,
        conflicting arguments ``OptionConflict``, both before any download.
        """
        request = ModelRequest(
            language=language,
            model_dir=Path(model_dir) if model_dir is not None else None,
            config=config,
            runtime=runtime,
            precision=precision,
            placement=placement,
            compute_units=compute_units,
            offline=offline,
            progress=progress,
            threads=threads,
        )
        return open_request(request)

    @property
    def sample_rate(self) -> int:
        """Samples per second of the audio this model speaks (24 kHz for Pocket TTS)."""
        return self._config.mimi.sample_rate

    @property
    def _samples_per_frame(self) -> int:
        return self._config.mimi.samples_per_frame

    def _loaded(self) -> LoadedModel:
        return LoadedModel(
            self.runtime,
            Path(),
            "",
            self._pack_language,
            self._pack_dir if self._pack_dir is not None else Path(),
        )

    def _as_voice(self, voice: VoiceState | str | Path | None) -> VoiceState | None:
        if voice is None or isinstance(voice, VoiceState):
            return voice
        if isinstance(voice, str | Path):
            return self.voices.get(voice)
        raise TypeError(
            f"voice must be a VoiceState, a built-in voice name or a voice file, not {voice!r}"
        )

    def _plans(
        self, text: str, max_tokens: int, frames_after_eos: int | None
    ) -> Iterator[ChunkPlan]:
        rate = self._config.mimi.frame_rate
        plans = plan_chunks(
            self._tokenizer, text, self._rules, max_tokens, frames_after_eos, frame_rate=rate
        )
        return split_overlong(
            self._tokenizer, plans, self._rules, max_tokens, frames_after_eos, rate
        )

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
        return list(self._script(text, normalize, ssml, max_tokens, frames_after_eos, on_warning))

    def _script(
        self,
        text: str,
        normalize: bool,
        ssml: bool | None,
        max_tokens: int,
        frames_after_eos: int | None,
        on_warning: Callable[[str], None] | None,
        record: SpokenParts | None = None,
    ) -> Iterator[ChunkPlan | Pause]:
        """``script`` made lazily, so a long text is never held as one list of plans.

        Markup is parsed now (a malformed text fails before any audio); numbers
        are read and chunks planned as the generator is consumed. ``record`` keeps each
        piece of speech as written and as spoken (words are captioned as written).
        """
        if not normalize:
            return self._plans(text, max_tokens, frames_after_eos)
        parts = parse_markup(text, ssml=ssml, language=self.language, on_warning=on_warning)
        return self._spoken(parts, max_tokens, frames_after_eos, record)

    def _spoken(
        self,
        parts: list[Speech | Pause],
        max_tokens: int,
        frames_after_eos: int | None,
        record: SpokenParts | None = None,
    ) -> Iterator[ChunkPlan | Pause]:
        spoke = False
        for part in parts:
            if isinstance(part, Speech):
                spoken = normalize_text(part.text, self.language)
                if spoken.strip():
                    if record is not None:
                        record.piece(part.as_written, spoken)
                    for plan in self._plans(spoken, max_tokens, frames_after_eos):
                        spoke = True
                        if record is not None:
                            record.chunk()
                        yield plan
            elif part.seconds > 0:
                spoke = True
                yield part
        if not spoke:
            raise EmptyTextError(
                nothing_to_say([p.text for p in parts if isinstance(p, Speech)], self.language)
            )

    def stream(
        self,
        text: str,
        voice: VoiceState | str | Path | None = None,
        options: SpeakOptions | None = None,
        *,
        noise: NoiseSource | None = None,
        on_warning: Callable[[str], None] | None = None,
        on_chunk: Callable[[ChunkTrace], None] | None = None,
    ) -> Iterator[Frame]:
        """Yields frames as they are generated, by the model's scheduler (a stream
        among the others it speaks at the same time, from any thread; alone, a
        scheduler of one row). Closing the iterator cancels the stream; a reader
        that stops reading stops generation ``MAX_AHEAD_FRAMES`` frames ahead.

        ``options`` is a ``SpeakOptions`` (the only way options arrive: one field
        changed is ``opts.with_(seed=1)``). ``noise`` replaces the seeded
        Gaussian noise (tests inject the oracle's).

        With ``output_chain`` on (the default) each frame has been through the
        causal part of FluidAudio's chain (80 Hz high-pass, de-essing shelf),
        exactly as the same samples of ``synthesize`` before its last step:
        peak normalisation needs the whole utterance, so a stream cannot have
        it (``pocketcli.audio.postprocess.peak_normalize`` on the joined
        frames gives ``synthesize``'s result). ``output_chain=False`` yields
        the model's raw audio. ``voice`` may also be what ``voices.get`` takes
        (a built-in name or a voice file).
        """
        voice = self._as_voice(voice)
        opts = _options(options)
        record = self._spoken_parts() if opts.words and opts.normalize else None
        # Planned lazily: a long text is never held as one list of chunks.
        chunks = self._script_of(text, opts, on_warning, record)
        noise = self._noise_for(opts) if noise is None else noise
        if opts.words:
            return self._timed_frames(text, chunks, voice, opts, noise, on_chunk, record)
        return self._frames_for(chunks, voice, opts, noise, on_chunk)

    def _spoken_parts(self) -> SpokenParts:
        """A record of a normalised script, so its words are captioned as the user wrote
        them (``$5``, spoken "five dollars")."""
        from pocketcli.words.source import SpokenParts

        return SpokenParts(lambda token: normalize_text(token, self.language))

    def _check_words(self) -> None:
        """``WordsUnavailable`` (one line) unless this model and pack can time words."""
        from pocketcli.words import WordsUnavailable

        default = f"the {self.runtime.name} runtime does not give them"
        reason = getattr(self.runtime, "words_unavailable_reason", default)
        if reason is not None:
            raise WordsUnavailable(f"cannot time words: {reason}")

    def _timed_frames(
        self,
        text: str,
        chunks: Iterable[ChunkPlan | Pause],
        voice: VoiceState | None,
        opts: SpeakOptions,
        noise: NoiseSource,
        on_chunk: Callable[[ChunkTrace], None] | None,
        record: SpokenParts | None = None,
    ) -> Iterator[Frame]:
        """``_frames_for`` with each frame's words (``Frame.words``), timed on the model's
        own audio before the output chain; with ``record`` (a normalised script), the
        user's own words."""
        from pocketcli.words import WordTimer
        from pocketcli.words.source import UserWords
        from pocketcli.words.stream import ScriptWatch, timed

        self._check_words()
        watch = ScriptWatch(chunks, self._tokenizer, None if opts.normalize else text, record)
        # Words are decided on the model's own frames (each with its attention), timed in
        # the stretched audio's seconds, and then the frames are stretched.
        model_frames = opts.with_(output_chain=False, speed=1.0)
        raw = self._frames_for(watch, voice, model_frames, noise, on_chunk)
        timer = WordTimer(watch.units_of, self.sample_rate, opts.speed)
        frames = timed(raw, timer if record is None else UserWords(timer, record))
        if opts.speed != 1.0:
            frames = _stretched(frames, Stretcher(opts.speed))
        if not opts.output_chain:
            return frames
        return _filtered(frames, OutputChain(self.sample_rate))

    def _frames_for(
        self,
        chunks: Iterable[ChunkPlan | Pause],
        voice: VoiceState | None,
        opts: SpeakOptions,
        noise: NoiseSource,
        on_chunk: Callable[[ChunkTrace], None] | None = None,
    ) -> Iterator[Frame]:
        """The frames ``stream`` yields for a text scripted into ``chunks``."""
        settings = self._settings_for(opts)
        frames = _handle_frames(self._scheduler.submit(chunks, voice, noise, settings, on_chunk))
        if opts.speed != 1.0:  # at 1.0 no stretcher: the samples stay exactly the model's
            frames = _stretched(frames, Stretcher(opts.speed))
        if not opts.output_chain:
            return frames
        return _filtered(frames, OutputChain(self.sample_rate))

    @property
    def _scheduler(self) -> Scheduler:
        """The scheduler that speaks this model's concurrent streams (made on first use)."""
        with self._scheduler_lock:
            if self._made_scheduler is None:
                self._made_scheduler = Scheduler(self.runtime)
            return self._made_scheduler

    def synthesize_many(
        self,
        texts: Sequence[str],
        voices: Sequence[VoiceState | str | Path | None] | VoiceState | str | Path | None = None,
        options: Sequence[SpeakOptions] | SpeakOptions | None = None,
        *,
        max_streams: int = defaults.MAX_STREAMS,
    ) -> list[np.ndarray]:
        """``synthesize`` for each text, spoken together (one batch per frame), at most
        ``max_streams`` at a time.

        ``voices`` and ``options`` are one for all texts or one per text. Each result
        equals what ``synthesize`` gives for its text alone, bit for bit in fp32, int8 and
        int4 alike (no row's result depends on its neighbours).
        """
        n = len(texts)
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise OptionsError("texts", f"item {i} is {type(text).__name__}, not a text")
        if isinstance(max_streams, bool) or not isinstance(max_streams, int) or max_streams < 1:
            raise OptionsError("max_streams", f"must be a whole number >= 1, not {max_streams!r}")
        voice_list = list(voices) if isinstance(voices, list | tuple) else [voices] * n
        opts_list = list(options) if isinstance(options, list | tuple) else [options] * n
        if len(voice_list) != n or len(opts_list) != n:
            raise FieldError(
                f"{n} texts need {n} {{voices}} and {{options}} (or one of each), got "
                f"{len(voice_list)} voices and {len(opts_list)} options",
                "voices",
                "options",
            )
        resolved = [
            (self._as_voice(v), _options(o)) for v, o in zip(voice_list, opts_list, strict=True)
        ]

        def speak(i: int) -> np.ndarray:
            voice, opts = resolved[i]
            frames = self.stream(texts[i], voice, opts)
            try:
                pieces = [f.audio for f in frames]
            finally:
                frames.close()  # type: ignore[attr-defined]
            return _joined(pieces, opts)

        if n == 0:
            return []
        # One reader per stream in flight: each stream's frames are read as they come.
        with ThreadPoolExecutor(min(n, max_streams), thread_name_prefix="speak") as pool:
            return list(pool.map(speak, range(n)))

    async def asynthesize(
        self,
        text: str,
        voice: VoiceState | str | Path | None = None,
        options: SpeakOptions | None = None,
    ) -> np.ndarray:
        """``synthesize`` for an event loop: awaiting many of these (``asyncio.gather``)
        speaks them together on the scheduler, and the loop is never blocked."""
        frames = self.stream(text, voice, options)
        opts = _options(options)
        loop = asyncio.get_running_loop()
        sentinel = object()
        pieces: list[np.ndarray] = []
        try:
            while True:
                frame = await loop.run_in_executor(None, next, frames, sentinel)
                if frame is sentinel:
                    break
                assert isinstance(frame, Frame)
                pieces.append(frame.audio)
        finally:
            frames.close()  # type: ignore[attr-defined]
        return _joined(pieces, opts)

    def _script_for(
        self,
        text: str,
        opts: SpeakOptions,
        on_warning: Callable[[str], None] | None = None,
        record: SpokenParts | None = None,
    ) -> list[ChunkPlan | Pause]:
        """``script`` with the text options of ``opts`` (``record``: as ``_script``)."""
        return list(self._script_of(text, opts, on_warning, record))

    def _script_of(
        self,
        text: str,
        opts: SpeakOptions,
        on_warning: Callable[[str], None] | None = None,
        record: SpokenParts | None = None,
    ) -> Iterator[ChunkPlan | Pause]:
        """``_script`` with the text options of ``opts``, planned lazily."""
        o = opts
        return self._script(
            text, o.normalize, o.ssml, o.max_tokens, o.frames_after_eos, on_warning, record
        )

    def _noise_for(self, opts: SpeakOptions) -> GaussianNoise:
        """The seeded noise a synthesis with ``opts`` draws from."""
        temp = self._config.default_temperature if opts.temperature is None else opts.temperature
        return GaussianNoise(temp, opts.seed, opts.noise_clamp)

    def _settings_for(self, opts: SpeakOptions) -> GenerationSettings:
        eos = opts.eos_threshold
        return GenerationSettings(
            eos_threshold=self._config.default_eos_threshold if eos is None else eos,
            decode_steps=opts.decode_steps,
            words=opts.words,
        )

    def session(
        self,
        voice: VoiceState | str | Path | None = None,
        options: SpeakOptions | None = None,
        *,
        on_warning: Callable[[str], None] | None = None,
    ) -> Session:
        """A live session (FluidAudio's ``makeSession``): ``enqueue(text)`` from any
        thread while frames are read, ``finish()``, ``cancel()``; see ``pocketcli.session``.
        ``voice`` is a voice state, or a built-in name or voice file (``voices.get(...)``)."""
        from pocketcli.session import Session

        opts = _options(options)
        return Session(_SessionModel(self), self._as_voice(voice), opts, on_warning=on_warning)

    def synthesize(
        self,
        text: str,
        voice: VoiceState | str | Path | None = None,
        options: SpeakOptions | None = None,
        *,
        noise: NoiseSource | None = None,
        on_warning: Callable[[str], None] | None = None,
        on_chunk: Callable[[ChunkTrace], None] | None = None,
    ) -> np.ndarray:
        """The whole utterance as float32 samples at ``sample_rate``: what
        ``pockettts tts`` writes for the same options (with ``output_chain``,
        FluidAudio's high-pass, de-essing shelf and peak normalisation; without
        it the model's raw audio; ``peak_normalize`` alone: FluidAudio's --no-deess).
        With ``SpeakOptions(words=True)`` the array also has ``.words``: every timed word
        (``pocketcli.words.Word``: word, start, end in seconds)."""
        opts = _options(options)
        frames = list(
            self.stream(text, voice, opts, noise=noise, on_warning=on_warning, on_chunk=on_chunk)
        )
        audio = _joined([f.audio for f in frames], opts)
        if not opts.words:
            return audio
        from pocketcli.words import TimedAudio

        return TimedAudio.of(audio, [w for f in frames for w in f.words])

    def synthesize_to_file(
        self,
        text: str,
        path: str | Path,
        voice: VoiceState | str | Path | None = None,
        options: SpeakOptions | None = None,
        format: str | None = None,
        *,
        noise: NoiseSource | None = None,
        on_warning: Callable[[str], None] | None = None,
        on_chunk: Callable[[ChunkTrace], None] | None = None,
    ) -> float:
        """Speaks ``text`` into an audio file and returns its length in seconds.

        The file is what ``synthesize`` gives, encoded as ``format`` (wav, flac,
        ogg, opus, mp3, s16le, f32le; default: from the file name, else wav).
        Frames are streamed to a hidden file beside ``path`` as they are made
        (memory does not grow with the text), which replaces ``path`` only once
        complete: a failure or an interrupt leaves no partial file. ``noise``,
        ``on_warning`` and ``on_chunk`` as ``stream``.
        """
        from pocketcli.audio.output import open_audio_writer

        opts = _options(options)
        rate = self.sample_rate
        with open_audio_writer(path, format, rate, peak_normalize=opts.peak_normalized) as out:
            frames = self.stream(
                text, voice, opts, noise=noise, on_warning=on_warning, on_chunk=on_chunk
            )
            for frame in frames:
                out.write(frame.audio, speech=not frame.is_pause)
        return out.samples / rate


@dataclasses.dataclass(frozen=True)
class ChosenVoice:
    """The voice ``PocketTTS.voices.choose`` picked: its state (None: no voice
    prompt), a name for reports and metrics, and its file when there is one."""

    state: VoiceState | None
    name: str
    path: Path | None = None


def _options(options: SpeakOptions | None) -> SpeakOptions:
    """``options``, which must be a ``SpeakOptions`` (or None: the defaults)."""
    if options is None:
        return SpeakOptions()
    if not isinstance(options, SpeakOptions):
        raise TypeError(f"options must be a SpeakOptions, not {type(options).__name__}")
    return options


class _SessionModel:
    """The narrow side of a loaded model that a ``Session`` drives (``session.SessionModel``):
    scripting a text, a stream of the model's scheduler, the seeded noise, the output chain."""

    def __init__(self, tts: PocketTTS) -> None:
        self._tts = tts
        self.runtime = tts.runtime

    def script(
        self,
        text: str,
        opts: SpeakOptions,
        on_warning: Callable[[str], None] | None,
        record: SpokenParts | None = None,
    ) -> list[ChunkPlan | Pause]:
        return self._tts._script_for(text, opts, on_warning, record)

    def submit(
        self,
        items: Iterable[ChunkPlan | Pause | Mark],
        voice: VoiceState | None,
        opts: SpeakOptions,
        noise: NoiseSource,
        ready: Callable[[], bool],
    ) -> StreamHandle:
        settings = self._tts._settings_for(opts)
        return self._tts._scheduler.submit(items, voice, noise, settings, ready=ready)

    def output_chain(self, opts: SpeakOptions) -> OutputChain | None:
        return OutputChain(self._tts.sample_rate) if opts.output_chain else None

    def noise(self, opts: SpeakOptions) -> GaussianNoise:
        return self._tts._noise_for(opts)

    def words(self, opts: SpeakOptions) -> SessionWords:
        from pocketcli.words.stream import SessionWords

        self._tts._check_words()
        tts = self._tts
        given = not opts.normalize
        return SessionWords(tts._tokenizer, tts.sample_rate, given, opts.speed, tts._spoken_parts)


def _joined(pieces: list[np.ndarray], opts: SpeakOptions) -> np.ndarray:
    """A synthesis's frames as one utterance (peak-normalised when the options say so)."""
    if not pieces:
        return np.zeros(0, np.float32)
    audio = np.concatenate(pieces)
    return peak_normalize(audio) if opts.peak_normalized else audio


def _handle_frames(handle: StreamHandle) -> Iterator[Frame]:
    """A scheduler stream's frames as a generator: closing it (or an error) cancels it."""
    try:
        yield from handle
    finally:
        handle.cancel()


def _filtered(frames: Iterator[Frame], chain: OutputChain) -> Iterator[Frame]:
    try:
        for frame in frames:
            yield dataclasses.replace(frame, audio=chain.process(frame.audio))
    finally:
        close = getattr(frames, "close", None)
        if close is not None:  # a stopped reader stops the engine (and its decoder thread)
            close()


def _stretched(frames: Iterator[Frame], stretcher: Stretcher) -> Iterator[Frame]:
    """The frames time-stretched by this stream's own stretcher: each carries the
    samples its input completes (frames that complete none are left out, their words
    carried by the next), the tail flushed at the end rides on a copy of the last frame."""
    last = None
    held = HeldWords()
    try:
        for frame in frames:
            last = frame
            passed = held.pass_on(dataclasses.replace(frame, audio=stretcher.process(frame.audio)))
            if passed is not None:
                yield passed
        tail = stretcher.flush()
        if last is not None and (len(tail) or held.words):
            yield dataclasses.replace(last, audio=tail, words=held.words)
    finally:
        close = getattr(frames, "close", None)
        if close is not None:
            close()


def _is_voice_path(value: str | Path) -> bool:
    if isinstance(value, Path):
        return True
    return (
        value.lower().endswith((".safetensors", ".bin"))
        or "/" in value
        or "\\" in value
        or Path(value).is_file()
    )


def _warn_caller(notes: list[str]) -> None:
    """Voice notices as Python warnings pointing at the caller of the API method."""
    for note in notes:
        warnings.warn(note, VoiceWarning, stacklevel=3)


def open_request(request: ModelRequest, *, need_here: bool = True, **extras: Any) -> PocketTTS:
    """``PocketTTS.open`` for a ``ModelRequest`` (what pocketcli's front ends build from
    their flags), through the runtime registry like every runtime. ``extras`` go to the
    runtime's loader (CoreML: ``predictor_factory``, ``config``; then ``need_here=False``
    lets twins of the Core ML models run anywhere, the runtime saying when Core ML is
    missing)."""
    request = registry.check(request, need_here=need_here)
    spec = registry.spec_for(request)
    loaded = spec.load(spec.find_pack(request), request, **extras)  # type: ignore[call-arg]
    return PocketTTS(
        loaded.runtime,
        loaded.tokenizer_path,
        loaded.tokenizer_kind,
        loaded.language or request.model_language,
        spec=spec,
        request=request,
        pack_dir=loaded.pack_dir,
        pack_language=loaded.language,
    )


class Voices:
    """The voices of a loaded model (``tts.voices``): built-in ones by name, voice
    files of every published format, clones of recordings, and the default."""

    def __init__(self, tts: PocketTTS) -> None:
        self._tts = tts

    def _spec(self) -> RuntimeSpec:
        spec = self._tts._spec
        if spec is None:
            raise TypeError("this PocketTTS was built by hand: open it with PocketTTS.open")
        return spec

    def get(
        self,
        name_or_path: str | Path,
        *,
        on_warning: Callable[[str], None] | None = None,
    ) -> VoiceState:
        """A voice by built-in name (``"alba"``, ``"lola"``; FluidAudio's ``af_heart``
        is alba) on any runtime, or a voice file (a ``Path``, or a string naming an
        existing file or ending in ``.safetensors``/``.bin``). Warnings as in ``load``."""
        if _is_voice_path(name_or_path):
            return self.load(name_or_path, on_warning=on_warning)
        return self.load(self.file(str(name_or_path)), on_warning=on_warning)

    def file(self, name: str) -> Path:
        """The file of a built-in voice for this model (fetched on first use)."""
        from pocketcli.store.catalog import canonical_voice

        tts = self._tts
        return self._spec().voice_file(tts._loaded(), tts._request, canonical_voice(name))

    @property
    def default_name(self) -> str | None:
        """The voice ``pockettts tts`` speaks with when none is named: the
        language's own (pocket-tts's choice), else alba; None for models without
        built-in voices (a custom config), which then speak with no voice prompt."""
        tts = self._tts
        if tts._spec is None:
            return None
        return tts._spec.default_voice(tts._loaded(), tts._request)

    def default(self) -> VoiceState | None:
        """The voice state of ``default_name`` (None: no voice prompt)."""
        name = self.default_name
        return None if name is None else self.get(name)

    def choose(
        self,
        voice: str | None = None,
        voice_file: str | Path | None = None,
        clone_voice: str | Path | None = None,
        save_voice: str | Path | None = None,
        *,
        on_warning: Callable[[str], None] | None = None,
    ) -> ChosenVoice:
        """The voice every front end speaks with, by one rule: a recording to
        clone (saved to ``save_voice`` when given, and then spoken as read back
        from it, so a format that keeps less is what is heard), else a voice file (``voice``
        then picks one voice of a voices.bin), else the built-in ``voice`` by
        name, else the model's default (none for a model without built-in
        voices: no voice prompt)."""
        if clone_voice is not None:
            state = self.clone(clone_voice, on_warning=on_warning)
            if save_voice is not None:
                self.save(state, save_voice, on_warning=on_warning)
                # The voice spoken is the voice saved: a .bin keeps 125 frames of the
                # prompt, so a later run with that file sounds the same as this one.
                state = self.load(save_voice, on_warning=on_warning)
            saved = Path(save_voice) if save_voice is not None else None
            return ChosenVoice(state, Path(clone_voice).stem, saved)
        if voice_file is not None:
            state = self.load(voice_file, voice, on_warning=on_warning)
            return ChosenVoice(state, voice or Path(voice_file).stem, Path(voice_file))
        name = voice or self.default_name
        if name is None:
            return ChosenVoice(None, "none")
        from pocketcli.store.catalog import canonical_voice

        name = canonical_voice(name)
        path = self.file(name)
        return ChosenVoice(self.load(path, on_warning=on_warning), name, path)

    def load(
        self,
        path: str | Path,
        name: str | None = None,
        *,
        on_warning: Callable[[str], None] | None = None,
    ) -> VoiceState:
        """Reads a voice file of any published format (found from its content) and
        checks it fits this model: a Kyutai voice state (F32/BF16/F16 caches, as
        ``pocket-tts export-voice`` writes), Kyutai's ``audio_prompt`` embeddings,
        the web demos' voices.bin/PTVB1 containers (``name`` picks the voice), a
        ``.npy`` array or FluidAudio's ``.bin`` (conditioning formats are prefilled
        here, so they cost one FlowLM call). Tensors ignored in the file are
        reported to ``on_warning``, else as ``VoiceWarning``."""
        notes: list[str] = []
        voice = load_voice_file(path, self._tts.runtime, name, on_warning or notes.append)
        _warn_caller(notes)
        return voice

    @property
    def cloning_available(self) -> bool:
        """False for packs built from Kyutai's weights without voice cloning."""
        return self._tts.runtime.cloning_unavailable_reason is None

    def clone(
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
        The voice keeps its conditioning, so ``save`` can write ``.bin`` too.
        A pack without voice-cloning weights raises ``VoiceCloningUnavailable``.
        """
        tts = self._tts
        cloning.require_cloning(tts.runtime)
        if tts._spec is not None:
            tts._spec.prepare_cloning(tts._loaded(), tts._request)
        notes: list[str] = []
        warn = on_warning or notes.append
        if isinstance(audio, str | Path):
            if sample_rate is not None:
                raise ValueError("sample_rate is for sample arrays; a file has its own")
            prompt = load_prompt(audio, tts.sample_rate, warn)
        else:
            if sample_rate is None:
                raise ValueError("pass the sample_rate of the samples")
            prompt = prepare_prompt(audio, sample_rate, tts.sample_rate, warn)
        voice = cloning.clone_voice(tts.runtime, prompt)
        _warn_caller(notes)
        return voice

    def save(
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
