"""Choosing and loading the model from command-line options (shared by subcommands)."""

from __future__ import annotations

import platform
import sys
from dataclasses import dataclass
from pathlib import Path

from pocketcli.cli import clickcompat as click
from pocketcli.errors import UserError

RUNTIMES = ("auto", "onnx", "coreml")
PRECISIONS = {"onnx": ("fp32", "int8"), "coreml": ("fp16", "int8")}
DEFAULT_PRECISION = {"onnx": "fp32", "coreml": "fp16"}
COMPUTE_UNITS = ("default", "no-ane", "all", "cpu-gpu", "cpu-ane", "cpu-only")
COMPUTE_UNIT_ALIASES = {"avoid-ane": "no-ane", "gpu": "cpu-gpu", "ane": "cpu-ane",
                        "cpu": "cpu-only"}
PLACEMENTS = ("gpu", "ane")
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


def choose_runtime(requested: str) -> str:
    if requested not in RUNTIMES:
        raise click.BadParameter(f"{requested!r}; choose from {', '.join(RUNTIMES)}",
                                 param_hint="--runtime")
    if requested == "auto":
        # CoreML is the natural choice on a Mac, once its runtime is installed.
        if sys.platform == "darwin" and _coreml_runtime_available():
            return "coreml"
        return "onnx"
    return requested


def _coreml_runtime_available() -> bool:
    try:
        from pocketcli.runtimes import coreml  # noqa: F401
    except ImportError:
        return False
    return True


def validate_choice(model_dir: Path | None, language: str | None, config: str | None,
                    runtime: str, precision: str | None, compute_units: str, placement: str,
                    offline: bool) -> ModelChoice:
    runtime = choose_runtime(runtime)
    valid = PRECISIONS[runtime]
    precision = precision or DEFAULT_PRECISION[runtime]
    if precision not in valid:
        raise click.BadParameter(
            f"{precision!r} is not a {runtime} precision; choose from {', '.join(valid)}",
            param_hint="--precision")
    units = COMPUTE_UNIT_ALIASES.get(compute_units, compute_units)
    if units not in COMPUTE_UNITS:
        names = ", ".join(COMPUTE_UNITS + tuple(COMPUTE_UNIT_ALIASES))
        raise click.BadParameter(f"{compute_units!r}; choose from {names}",
                                 param_hint="--compute-units")
    if placement not in PLACEMENTS:
        raise click.BadParameter(f"{placement!r}; choose from {', '.join(PLACEMENTS)}",
                                 param_hint="--placement")
    if config is not None and language is not None:
        raise click.UsageError("--config and --language are exclusive")
    if model_dir is not None and (config is not None or language is not None):
        raise click.UsageError("--model-dir already names the model: drop --language/--config")
    return ModelChoice(model_dir, language, config, runtime, precision, units, placement,
                       offline)


def load_model(choice: ModelChoice, quiet: bool = False):
    """The PocketTTS for these options: a local pack, or one from the store."""
    from pocketcli.api import PocketTTS

    if choice.runtime == "coreml":
        if sys.platform != "darwin":
            raise UserError(
                f"the CoreML runtime runs only on macOS (this is {platform.system()}); "
                "use --runtime onnx")
        raise UserError("the CoreML runtime is not available in this build; use --runtime onnx")
    pack = choice.model_dir
    if pack is None:
        from pocketcli.store import resolve_onnx_pack

        language = choice.language if choice.config is None else None
        if language is None and choice.config is None:
            language = DEFAULT_LANGUAGE
        pack = resolve_onnx_pack(language, choice.config, choice.precision, choice.offline,
                                 progress=not quiet)
    return PocketTTS.load(pack, precision=choice.precision)


def model_language(choice: ModelChoice) -> str:
    return choice.language or DEFAULT_LANGUAGE


def resolve_named_voice(choice: ModelChoice, name: str) -> Path:
    """A built-in voice: from the pack's own voices/ folder, else from the store."""
    if choice.model_dir is not None:
        local = choice.model_dir / "voices" / f"{name}.safetensors"
        if local.is_file():
            return local
        if choice.language is None and choice.config is None:
            raise UserError(
                f"voice {name!r} is not in {choice.model_dir / 'voices'}; "
                "use --voice-file, or --language to fetch built-in voices")
    from pocketcli.store import resolve_voice

    return resolve_voice(model_language(choice), name, choice.offline)
