"""The two typed requests every front end builds: which model, and how to speak.

``ModelRequest`` says which model to open (what ``PocketTTS.open`` takes, and
what the CLI's model flags make); ``SpeakOptions`` how to speak one text. The
CLI, batch runs, the benchmark, sessions and the server all build them and
hand them to the library; nothing below the API sees flags or dicts. ``None``
means "the default" (the runtime's, or the model's own, from its config).
Their errors (``pocketcli.errors.FieldError``) name these fields, not flags.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from pocketcli import defaults
from pocketcli.audio.stretch import check_speed
from pocketcli.errors import OptionConflict, OptionsError
from pocketcli.text.chunking import MAX_TOKENS_PER_CHUNK

__all__ = ["DEFAULT_LANGUAGE", "AUTO_RUNTIME", "ModelRequest", "OptionsError", "SpeakOptions"]

DEFAULT_LANGUAGE = defaults.LANGUAGE  # the model spoken when no language, pack or config is named
AUTO_RUNTIME = defaults.RUNTIME  # the best runtime that runs here

# Above this the noise swamps the flow and the audio is garbage; pocket-tts's
# own range of useful values is about 0..1.5.
MAX_TEMPERATURE = 10.0
MAX_SEED = 2**64 - 1
# The seed's bounds as a JSON schema says them (the OpenAPI document): one number everywhere.
# Exclusive of 2^64, which a double holds exactly (FastAPI writes the bounds as floats, and
# 2^64-1 as a float would be 2^64: a "maximum" would admit one seed too many).
SEED_BOUNDS = {"minimum": 0, "exclusiveMaximum": MAX_SEED + 1}


@dataclass(frozen=True)
class ModelRequest:
    """Which model to open: what ``PocketTTS.open`` and the CLI's model flags say.

    ``None`` means the runtime's default. Names are case-insensitive. The
    runtime registry checks a request against its runtime
    (``pocketcli.runtimes.registry.check``); ``normalized`` is the part that
    needs no runtime.
    """

    language: str | None = None
    model_dir: Path | None = None
    config: str | None = None  # a Kyutai config YAML: path, https:// or hf://
    runtime: str = AUTO_RUNTIME
    precision: str | None = None
    placement: str | None = None
    compute_units: str | None = None
    offline: bool = False
    progress: bool = False  # download and build progress on stderr
    threads: int | None = None
    rebuild: bool = False  # build the pack again (runtimes that build packs)

    @property
    def model_language(self) -> str:
        """The language asked for (the default one when none is)."""
        return self.language or DEFAULT_LANGUAGE

    def normalized(self) -> ModelRequest:
        """Names lower-cased and stripped, ``model_dir`` a ``Path``; raises
        ``OptionConflict`` when two fields both name the model."""
        req = replace(
            self,
            language=_lower(self.language),
            model_dir=Path(self.model_dir) if self.model_dir is not None else None,
            runtime=_lower(self.runtime) or AUTO_RUNTIME,
            precision=_lower(self.precision),
            placement=_lower(self.placement),
            compute_units=_lower(self.compute_units),
        )
        if req.config is not None and req.language is not None:
            raise OptionConflict(
                "{config} and {language} both name the model: give one", "config", "language"
            )
        if req.model_dir is not None and req.config is not None:
            raise OptionConflict(
                "{model_dir} already names the model: drop {config}", "model_dir", "config"
            )
        return req


def _lower(value: str | None) -> str | None:
    return value.strip().lower() if isinstance(value, str) else value


@dataclass(frozen=True)
class SpeakOptions:
    """How to speak one text. Every field has a safe default."""

    temperature: float | None = None  # None: the model's default (Kyutai: 0.3)
    seed: int | None = None  # None: fresh noise on every call
    eos_threshold: float | None = None  # None: the model's default
    decode_steps: int = 1  # LSD steps of the flow head
    frames_after_eos: int | None = None  # None: guessed from the chunk's length, as pocket-tts
    max_tokens: int = MAX_TOKENS_PER_CHUNK
    normalize: bool = True  # read numbers, symbols, [pause] and SSML
    ssml: bool | None = None  # None: SSML when the text starts with <speak>
    output_chain: bool = True  # FluidAudio's high-pass, de-essing shelf, peak normalise
    # None: with the output chain. True with output_chain=False is FluidAudio's
    # --no-deess: no filters, but still peak-normalised (its WAV writer does that).
    peak_normalize: bool | None = None
    noise_clamp: float | None = None  # pocket-tts's noise_clamp: noise truncated to +-this
    # Word timings from the model's attention: each frame of ``stream`` carries the words it
    # ends (``Frame.words``). Needs a model whose config has ``timestamp_heads``.
    words: bool = False
    speed: float = 1.0  # speaking rate, time-stretched with the pitch kept (1.0: no stretcher)

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        if self.temperature is not None and (
            not math.isfinite(self.temperature) or not 0.0 <= self.temperature <= MAX_TEMPERATURE
        ):
            raise OptionsError(
                "temperature",
                f"must be a number from 0 to {MAX_TEMPERATURE:g}, not {self.temperature!r}",
            )
        if self.seed is not None and (
            isinstance(self.seed, bool)
            or not isinstance(self.seed, int)
            or not 0 <= self.seed <= MAX_SEED
        ):
            raise OptionsError(
                "seed", f"must be a whole number from 0 to 2^64-1, not {self.seed!r}"
            )
        if self.eos_threshold is not None and math.isnan(self.eos_threshold):
            raise OptionsError("eos_threshold", "must be a number, not NaN")
        if not isinstance(self.decode_steps, int) or not 1 <= self.decode_steps <= 64:
            raise OptionsError("decode_steps", f"must be from 1 to 64, not {self.decode_steps!r}")
        if self.frames_after_eos is not None and not 0 <= self.frames_after_eos <= 1000:
            raise OptionsError(
                "frames_after_eos", f"must be from 0 to 1000, not {self.frames_after_eos!r}"
            )
        for name in ("normalize", "output_chain", "words"):
            if not isinstance(getattr(self, name), bool):
                raise OptionsError(name, f"must be True or False, not {getattr(self, name)!r}")
        if self.peak_normalize is not None and not isinstance(self.peak_normalize, bool):
            raise OptionsError(
                "peak_normalize", f"must be True, False or None, not {self.peak_normalize!r}"
            )
        if self.noise_clamp is not None and (
            isinstance(self.noise_clamp, bool)
            or not isinstance(self.noise_clamp, int | float)
            or not math.isfinite(self.noise_clamp)
            or not self.noise_clamp > 0
        ):
            raise OptionsError(
                "noise_clamp", f"must be a number above 0 (or None), not {self.noise_clamp!r}"
            )
        if (why := check_speed(self.speed)) is not None:
            raise OptionsError("speed", why)
        if not isinstance(self.max_tokens, int) or not 1 <= self.max_tokens <= 1000:
            raise OptionsError("max_tokens", f"must be from 1 to 1000, not {self.max_tokens!r}")

    @property
    def peak_normalized(self) -> bool:
        """Whether a whole utterance is divided by its peak (see ``peak_normalize``)."""
        return self.output_chain if self.peak_normalize is None else self.peak_normalize

    def with_(self, **changes: Any) -> SpeakOptions:
        """A copy with some fields changed (``None`` values are ignored)."""
        known = {f.name for f in fields(self)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise TypeError(f"unknown speak option(s): {', '.join(unknown)}")
        return replace(self, **{k: v for k, v in changes.items() if v is not None})
