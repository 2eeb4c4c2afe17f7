"""Choosing and loading the model from command-line options (shared by subcommands).

Valid languages, precisions, placements and voices come from the store's
catalog, so every subcommand accepts and lists the same values.
"""

from __future__ import annotations

import platform
import sys
from dataclasses import dataclass
from pathlib import Path

from pocketcli.cli import clickcompat as click
from pocketcli.cli.store_options import RUNTIME_CHOICES, choose_runtime, usage_error
from pocketcli.errors import UserError

RUNTIMES = RUNTIME_CHOICES
COMPUTE_UNITS = ("default", "no-ane", "all", "cpu-gpu", "cpu-ane", "cpu-only")
COMPUTE_UNIT_ALIASES = {
    "avoid-ane": "no-ane",
    "gpu": "cpu-gpu",
    "ane": "cpu-ane",
    "cpu": "cpu-only",
}
BACKENDS = ("pocket", "pockettts")
DEFAULT_LANGUAGE = "english"
DEFAULT_VOICE = "alba"


@dataclass(frozen=True)
class ModelChoice:
    model_dir: Path | None
    language: str | None
    config: str | None
    runtime: str
    precision: str
    compute_units: str
    placement: str
    offline: bool


def validate_choice(
    model_dir: Path | None,
    language: str | None,
    config: str | None,
    runtime: str,
    precision: str | None,
    compute_units: str,
    placement: str,
    offline: bool,
) -> ModelChoice:
    from pocketcli import store

    runtime = choose_runtime(runtime)
    if runtime == "coreml" and sys.platform != "darwin":
        raise UserError(
            f"the CoreML runtime runs only on macOS (this is {platform.system()}); "
            "use --runtime onnx"
        )
    units = COMPUTE_UNIT_ALIASES.get(compute_units, compute_units)
    if units not in COMPUTE_UNITS:
        names = ", ".join(COMPUTE_UNITS + tuple(COMPUTE_UNIT_ALIASES))
        raise click.BadParameter(
            f"{compute_units!r}; choose from {names}", param_hint="--compute-units"
        )
    if config is not None and language is not None:
        raise click.UsageError("--config and --language are exclusive")
    if model_dir is not None and (config is not None or language is not None):
        raise click.UsageError("--model-dir already names the model: drop --language/--config")
    try:
        precision = store.check_precision(runtime, precision or store.default_precision(runtime))
        store.check_placement(placement)
        if language is not None:
            store.check_language(runtime, language)
    except store.UnknownNameError as exc:
        raise usage_error(exc) from None
    if runtime == "coreml" and (config is not None or model_dir is not None):
        raise click.UsageError("--runtime coreml takes FluidAudio's packs by --language")
    return ModelChoice(model_dir, language, config, runtime, precision, units, placement, offline)


def check_voice_name(choice: ModelChoice, voice: str | None) -> None:
    """Fails fast (exit 2, valid names listed) before any download or load."""
    from pocketcli import store

    if voice is None or choice.model_dir is not None or choice.config is not None:
        return
    try:
        store.check_voice(voice, model_language(choice))
    except store.UnknownNameError as exc:
        raise usage_error(exc) from None


def load_model(choice: ModelChoice, quiet: bool = False):
    """The PocketTTS for these options: a local pack, or one from the store."""
    from pocketcli import store
    from pocketcli.api import PocketTTS

    if choice.runtime == "coreml":
        pack = store.resolve_coreml_pack(
            model_language(choice),
            choice.precision,
            choice.placement,
            choice.offline,
            progress=not quiet,
        )
        return PocketTTS.load_coreml(pack, choice.precision, choice.placement, choice.compute_units)
    pack = choice.model_dir
    if pack is None:
        language = None if choice.config is not None else model_language(choice)
        pack = store.resolve_onnx_pack(
            language, choice.config, choice.precision, choice.offline, progress=not quiet
        )
    return PocketTTS.load(pack, precision=choice.precision)


def model_language(choice: ModelChoice) -> str:
    return choice.language or DEFAULT_LANGUAGE


def default_voice(choice: ModelChoice) -> str:
    """pocket-tts's own default for the language (a native speaker), else alba."""
    from pocketcli import store

    return store.native_voice(model_language(choice)) or DEFAULT_VOICE


def resolve_named_voice(choice: ModelChoice, name: str, pack_language: str | None = None) -> Path:
    """A built-in voice: from the pack's own folders, else from the store."""
    from pocketcli import store

    if choice.model_dir is not None:
        for local in (
            choice.model_dir / "voices" / f"{name}.safetensors",
            choice.model_dir / "constants_bin" / f"{name}.safetensors",
        ):
            if local.is_file():
                return local
        if pack_language is None:
            raise UserError(
                f"voice {name!r} is not in {choice.model_dir / 'voices'} and the pack does not "
                "say its language; use --voice-file or --language"
            )
    if choice.config is not None:
        raise UserError(
            "built-in voices were computed with the released weights; with "
            "--config use --voice-file or --clone-voice"
        )
    language = pack_language or model_language(choice)
    try:
        voice = store.check_voice(name, language)
    except store.UnknownNameError as exc:
        raise usage_error(exc) from None
    if choice.runtime == "coreml":
        raise UserError(f"voice {name!r} is not in the CoreML pack")
    return store.resolve_voice(language, voice, choice.offline, progress=False)


def _pack_language(tts) -> str | None:
    manifest = getattr(tts.runtime, "manifest", None)
    source = getattr(manifest, "source", None) or {}
    return source.get("language")


@dataclass(frozen=True)
class ChosenVoice:
    state: object | None  # VoiceState, or None for no voice prompt
    name: str  # for reports and metrics
    path: Path | None = None  # the voice file, when there is one


def choose_voice(
    tts,
    choice: ModelChoice,
    voice: str | None,
    voice_file: Path | None = None,
    clone_voice: Path | None = None,
    save_voice: Path | None = None,
    on_warning=None,
) -> ChosenVoice:
    """The voice by FluidAudio's precedence: a recording to clone, then a voice
    file, then a built-in voice by name (the language's default when none)."""
    from pocketcli import store

    if clone_voice is not None:
        if choice.runtime == "coreml":  # FluidAudio's encoders are fetched on demand
            store.resolve_coreml_encoder(model_language(choice), choice.offline)
        state = tts.clone_voice(clone_voice, on_warning=on_warning)
        if save_voice is not None:
            tts.save_voice(state, save_voice, on_warning=on_warning)
        return ChosenVoice(state, clone_voice.stem, save_voice)
    if voice_file is not None:  # -v picks a voice inside a container (voices.bin)
        quiet = lambda _note: None  # noqa: E731 - no notices without a callback (-q)
        state = tts.load_voice(voice_file, voice, on_warning=on_warning or quiet)
        return ChosenVoice(state, voice or voice_file.stem, voice_file)
    if choice.runtime == "coreml":
        name = store.canonical_voice(voice or default_voice(choice))
        path = Path(tts.runtime.pack_dir) / "constants_bin" / f"{name}.safetensors"
        if not path.is_file():
            raise UserError(f"voice {name!r} is not in the CoreML pack ({path.parent})")
        return ChosenVoice(tts.load_voice(path), name, path)
    language = _pack_language(tts)
    if voice is None and (
        choice.config is not None or (choice.model_dir is not None and language is None)
    ):
        local = (
            choice.model_dir / "voices" / f"{DEFAULT_VOICE}.safetensors"
            if choice.model_dir is not None
            else None
        )
        if local is not None and local.is_file():
            return ChosenVoice(tts.load_voice(local), DEFAULT_VOICE, local)
        return ChosenVoice(None, "none")  # custom weights or a bare pack: no prompt
    fallback = (store.native_voice(language) if language else None) or default_voice(choice)
    name = store.canonical_voice(voice or fallback)
    path = resolve_named_voice(choice, name, language)
    return ChosenVoice(tts.load_voice(path), name, path)
