"""From the model flags to the library: a checked ``ModelRequest``, then ``PocketTTS``.

Everything here maps flags to library calls; which runtime, pack and voice
that means is decided by ``PocketTTS`` and the runtime registry, so a Python
user gets exactly what the command line gets.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from pocketcli.cli.store_options import usage_error
from pocketcli.errors import OptionConflict, UnknownNameError
from pocketcli.runtimes.registry import ModelRequest

if TYPE_CHECKING:
    from pocketcli.api import PocketTTS

BACKENDS = ("pocket", "pockettts")


def notice(message: str) -> None:
    sys.stderr.write(f"pockettts: note: {message}\n")
    sys.stderr.flush()


def validate_choice(
    model_dir: Path | None,
    language: str | None,
    config: str | None,
    runtime: str,
    precision: str | None,
    compute_units: str | None = None,
    placement: str | None = None,
    offline: bool = False,
    *,
    need_here: bool = True,
    quiet: bool = False,
) -> ModelRequest:
    """The flags as a checked ModelRequest; bad values and conflicts are usage errors
    (exit 2), found before anything is downloaded or loaded."""
    request = ModelRequest(
        language=language,
        model_dir=model_dir,
        config=config,
        runtime=runtime,
        precision=precision,
        placement=placement,
        compute_units=compute_units,
        offline=offline,
        progress=not quiet,
    )
    try:
        checked = request.checked(need_here=need_here)
    except (UnknownNameError, OptionConflict) as exc:
        raise usage_error(exc) from None
    if not quiet:
        for note in checked.ignored_options():
            notice(note)
    return checked


def check_voice_name(choice: ModelRequest, voice: str | None) -> None:
    """Fails fast (exit 2, valid names listed) before any download or load."""
    if voice is None:
        return
    try:
        choice.spec.check_voice(choice, voice)
    except (UnknownNameError, OptionConflict) as exc:
        raise usage_error(exc) from None


def load_model(choice: ModelRequest, quiet: bool = False) -> PocketTTS:
    """The PocketTTS for these options: a local pack, or one from the store."""
    from pocketcli.api import PocketTTS

    return PocketTTS.from_request(replace(choice, progress=not quiet))


def names_voices_inside(voice_file: Path | None) -> bool:
    """Whether ``voice_file`` holds voices by name (a voices.bin or PTVB1
    container), so that -v picks one of them instead of being ignored."""
    if voice_file is None:
        return False
    from pocketcli.voices.formats import identify
    from pocketcli.voices.state import VoiceError

    try:
        return any(entry.name is not None for entry in identify(voice_file).voices)
    except (VoiceError, OSError):
        return False  # reported with its path when the voice is read


@dataclass(frozen=True)
class ChosenVoice:
    state: object | None  # VoiceState, or None for no voice prompt
    name: str  # for reports and metrics
    path: Path | None = None  # the voice file, when there is one


def choose_voice(
    tts: PocketTTS,
    voice: str | None,
    voice_file: Path | None = None,
    clone_voice: Path | None = None,
    save_voice: Path | None = None,
    on_warning=None,
) -> ChosenVoice:
    """The voice by FluidAudio's precedence: a recording to clone, then a voice
    file, then a built-in voice by name (the model's default when none)."""
    if clone_voice is not None:
        state = tts.clone_voice(clone_voice, on_warning=on_warning)
        if save_voice is not None:
            tts.save_voice(state, save_voice, on_warning=on_warning)
        return ChosenVoice(state, clone_voice.stem, save_voice)
    if voice_file is not None:  # -v picks a voice inside a container (voices.bin)
        quiet = lambda _note: None  # noqa: E731 - no notices without a callback (-q)
        state = tts.load_voice(voice_file, voice, on_warning=on_warning or quiet)
        return ChosenVoice(state, voice or voice_file.stem, voice_file)
    name = voice or tts.default_voice_name()
    if name is None:
        return ChosenVoice(None, "none")  # custom weights or a bare pack: no prompt
    from pocketcli.store.catalog import canonical_voice

    name = canonical_voice(name)
    path = tts.voice_file(name)
    return ChosenVoice(tts.load_voice(path), name, path)
