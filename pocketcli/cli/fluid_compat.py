"""``fluidaudio tts`` flags that mean nothing here, accepted so its scripts run unchanged.

FluidAudio's ``tts`` command serves several backends; the flags of the
others (and a few no-ops of its own) are accepted by ``pockettts tts`` with a
one-line notice each, hidden from ``--help`` (which mentions them in one line).
The flags Pocket TTS uses (``--voice``, ``--language``, ``--seed``,
``--temperature``, ``--placement``, ``--compute-units``, ``--clone-voice``,
``--voice-file``, ``--save-voice``, ``--no-deess``, ``--metrics``, ``--text``,
``--backend``, ``-o``) are ordinary options of the command.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import typer

# flag (and aliases) -> (takes a value, why it is ignored). From FluidAudio's
# Sources/FluidAudioCLI/Commands/TTSCommand.swift (v0.15.6 and PR #893).
IGNORED: dict[tuple[str, ...], tuple[bool, str]] = {
    ("--auto-download",): (False, "models are downloaded on demand anyway"),
    ("--cpu-only",): (False, "for FluidAudio's other backends; see --compute-units"),
    ("--variant", "--model-variant"): (True, "Kokoro's and Inflect's model variants"),
    ("--lang",): (True, "Supertonic's and Chatterbox's language; see --language"),
    ("--lexicon", "-l"): (True, "Kokoro's pronunciation lexicon"),
    ("--phonemes",): (False, "Kokoro's phoneme input"),
    ("--voice-style",): (True, "Supertonic's voice style"),
    ("--ve-variant", "--vector-estimator"): (True, "Supertonic's vector estimator"),
    ("--total-steps",): (True, "Supertonic's step count"),
    ("--silence",): (True, "Supertonic's silence length"),
    ("--prompt-audio",): (True, "LuxTTS's prompt; see --clone-voice"),
    ("--prompt-text",): (True, "LuxTTS's prompt transcript"),
    ("--alpha",): (True, "StyleTTS2's style mix"),
    ("--beta",): (True, "StyleTTS2's style mix"),
    ("--ipa",): (True, "StyleTTS2's phoneme input"),
    ("--reference",): (True, "StyleTTS2's reference audio; see --clone-voice"),
    ("--emotion",): (True, "NeuTTS's emotion"),
    ("--extended-output",): (False, "Chatterbox Nano's output size"),
    ("--chunk-dir",): (True, "Kokoro's chunk dumps"),
    ("--benchmark",): (False, "Kokoro's benchmark mode; see pockettts benchmark"),
}

HELP_LINE = (
    "FluidAudio's flags for its other backends (--variant, --cpu-only,"
    " --auto-download...) are accepted and ignored with a notice."
)


def _param_name(flag: str) -> str:
    return "fluidaudio_" + flag.lstrip("-").replace("-", "_")


def accept_fluidaudio_flags(
    command: Callable[..., Any], notice: Callable[[str], None]
) -> Callable[..., Any]:
    """``command`` with FluidAudio's meaningless flags added as hidden options;
    each one given prints one notice, then the command runs without it."""
    signature = inspect.signature(command)
    extra = []
    names: dict[str, tuple[str, str]] = {}
    for flags, (takes_value, why) in IGNORED.items():
        name = _param_name(flags[0])
        names[name] = (flags[0], why)
        default = typer.Option(None if takes_value else False, *flags, hidden=True)
        annotation = str | None if takes_value else bool
        extra.append(
            inspect.Parameter(
                name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation
            )
        )

    @functools.wraps(command)
    def wrapper(**kwargs: Any) -> Any:
        for name, (flag, why) in names.items():
            value = kwargs.pop(name, None)
            if value not in (None, False) and not kwargs.get("quiet"):
                notice(f"{flag} has no effect with Pocket TTS ({why}); ignored")
        return command(**kwargs)

    params = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in signature.parameters.values()]
    wrapper.__signature__ = signature.replace(parameters=[*params, *extra])  # type: ignore[attr-defined]
    return wrapper
