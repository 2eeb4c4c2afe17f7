"""Every flag that more than one command takes, declared once.

The values (runtimes, languages, precisions, placements, compute units,
voices) come from the runtime registry and the catalogue, so help,
completion and validation read the same lists. Values are case-insensitive
(FluidAudio lower-cases them too): each option lower-cases what it is given,
and the library checks it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import typer

from pocketcli import defaults
from pocketcli.cli.clickcompat import BadParameter, UsageError
from pocketcli.errors import FieldError, UserError
from pocketcli.options import MAX_TEMPERATURE
from pocketcli.runtimes import registry

FLUIDAUDIO_TEMPERATURE = 0.7  # FluidAudio's default; Kyutai's (and ours) is 0.3

# The flag that sets each library field (ModelRequest, SpeakOptions, the voice
# choice), where it is not "--" + the field with dashes: the one place the
# library's field names become the words the user typed.
FIELD_FLAGS = {
    "normalize": "--no-normalize",
    "output_chain": "--no-deess",
    "peak_normalize": "--no-deess",
}


def flag_for(field: str) -> str:
    """The flag that sets a library field (``model_dir`` -> ``--model-dir``)."""
    return FIELD_FLAGS.get(field) or "--" + field.replace("_", "-")


def in_flags(exc: UserError) -> str:
    """A library error in the user's words: the flags, not the fields (an unknown
    name keeps its kind in words: "unknown voice 'x'")."""
    if isinstance(exc, FieldError):
        return exc.named({field: flag_for(field) for field in exc.fields})
    return str(exc)


def lower(value: Any) -> Any:
    if isinstance(value, str):
        return value.strip().lower()
    if isinstance(value, list):
        return [lower(v) for v in value]
    return value


def _starting(values: tuple[str, ...] | list[str], incomplete: str) -> list[str]:
    low = incomplete.lower()
    return [v for v in values if v.startswith(low)]


def complete_from(values: tuple[str, ...]) -> Callable[[str], list[str]]:
    """The completion of an option or argument whose values are ``values``."""

    def complete(incomplete: str) -> list[str]:
        return _starting(values, incomplete)

    return complete


def complete_runtime(incomplete: str) -> list[str]:
    return _starting([registry.AUTO, *registry.names()], incomplete)


def complete_language(incomplete: str) -> list[str]:
    return _starting(registry.all_languages(), incomplete)


def complete_precision(incomplete: str) -> list[str]:
    return _starting(registry.all_precisions(), incomplete)


def complete_placement(incomplete: str) -> list[str]:
    return _starting(registry.all_placements(), incomplete)


def complete_compute_units(incomplete: str) -> list[str]:
    return _starting(registry.all_compute_units(), incomplete)


def complete_voice(incomplete: str) -> list[str]:
    from pocketcli.store.catalog import known_voices

    return _starting(known_voices(), incomplete)


def _per_runtime(attr: str) -> str:
    """e.g. "onnx: fp32 (default), int8, int4; coreml: fp16 (default), int8"."""
    parts = []
    for name in registry.builtin_names():
        spec = registry.get(name)
        values = getattr(spec, attr)
        if not values:
            continue
        default = getattr(spec, f"default_{attr[:-1]}", None)
        listed = ", ".join(f"{v} (default)" if v == default else v for v in values)
        parts.append(f"{name}: {listed}")
    return "; ".join(parts)


def runtime() -> Any:
    return typer.Option(
        registry.AUTO,
        "--runtime",
        metavar="NAME",
        callback=lower,
        autocompletion=complete_runtime,
        help=(
            f"auto (CoreML on a Mac that has it, else ONNX), {', '.join(registry.builtin_names())}"
            " or a plug-in runtime."
        ),
    )


def language(
    what: str = f"Language pack (default {defaults.LANGUAGE})", repeatable: bool = False
) -> Any:
    return typer.Option(
        None,
        "--language",
        metavar="LANG",
        callback=lower,
        autocompletion=complete_language,
        help=f"{what}, e.g. english, spanish, german_24l.{' Repeatable.' if repeatable else ''}",
    )


def precision() -> Any:
    return typer.Option(
        None,
        "--precision",
        metavar="P",
        callback=lower,
        autocompletion=complete_precision,
        help=f"{_per_runtime('precisions')}.",
    )


def placement() -> Any:
    return typer.Option(
        None,
        "--placement",
        metavar="P",
        callback=lower,
        autocompletion=complete_placement,
        help=f"Where models run ({_per_runtime('placements')}).",
    )


def compute_units() -> Any:
    return typer.Option(
        None,
        "--compute-units",
        metavar="U",
        callback=lower,
        autocompletion=complete_compute_units,
        help=f"Compute-unit preset ({_per_runtime('compute_units')}).",
    )


def model_dir() -> Any:
    return typer.Option(
        None, "--model-dir", metavar="DIR", help="A local pack (built ONNX pack, or CoreML pack)."
    )


def config() -> Any:
    return typer.Option(
        None,
        "--config",
        metavar="YAML",
        help="Kyutai config YAML (path, https:// or hf://) instead of a language.",
    )


def offline() -> Any:
    return typer.Option(False, "--offline", help="Never touch the network.")


def quiet(what: str = "No summary on stderr.") -> Any:
    return typer.Option(False, "-q", "--quiet", help=what)


def voice(
    what: str = "Built-in voice (default: the language's own, else alba).", *aliases: str
) -> Any:
    return typer.Option(
        None, "-v", "--voice", *aliases, metavar="NAME", autocompletion=complete_voice, help=what
    )


def voice_file() -> Any:
    return typer.Option(
        None,
        "--voice-file",
        metavar="FILE",
        help="Voice file of any published format (see `pockettts inspect`); -v picks one"
        " voice of a voices.bin.",
    )


def _temperature(value: str) -> float:
    """A finite number from 0 to MAX_TEMPERATURE (click's range says "less than or equal
    to 10" for NaN, which is no number at all)."""
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if math.isnan(number):
        raise BadParameter(f"{value!r} is not a number: give one from 0 to {MAX_TEMPERATURE:g}")
    if not 0.0 <= number <= MAX_TEMPERATURE:
        raise BadParameter(f"{value} is not in the range 0<=x<={MAX_TEMPERATURE:g}")
    return number


def temperature() -> Any:
    return typer.Option(
        None,
        "--temperature",
        parser=_temperature,
        metavar="T",
        help=(
            f"Sampling temperature, 0<=x<={MAX_TEMPERATURE:g} (default {defaults.TEMPERATURE:g},"
            " Kyutai's choice;"
            " FluidAudio's default is "
            f"{FLUIDAUDIO_TEMPERATURE})."
        ),
    )


def _seed(value: str) -> int:
    """A whole number, said in our words (not pydantic's); SpeakOptions checks its range."""
    text = value.strip().replace("_", "")
    digits = text[1:] if text[:1] in "+-" else text
    if not (digits.isascii() and digits.isdigit() and len(digits) <= 40):
        raise UsageError(f"--seed must be a whole number from 0 to 2^64-1, not {value!r}")
    return int(text)


def seed() -> Any:
    return typer.Option(
        None,
        "--seed",
        parser=_seed,
        metavar="N",
        help="Seed for the noise, 0 to 2^64-1: same seed, same audio.",
    )


def speed() -> Any:
    return typer.Option(
        None,
        "--speed",
        metavar="X",
        help="Speaking rate, 0.25 to 4 (1.3: 30% faster), pitch kept (default 1).",
    )


def noise_clamp() -> Any:
    return typer.Option(
        None,
        "--noise-clamp",
        metavar="X",
        help="Truncate the sampling noise to +-X (pocket-tts's noise_clamp; default: none).",
    )
