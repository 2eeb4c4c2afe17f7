"""From the model flags to the library: the ``ModelFlags`` bundle, a checked ``ModelRequest``.

The eight model flags (``--language``, ``--runtime``, ``--precision``,
``--placement``, ``--compute-units``, ``--model-dir``, ``--config``,
``--offline``) are declared once, here: a command takes them whole as one
``model: ModelFlags = MODEL`` parameter and ``@takes_model_flags`` puts the
options in its place. ``ModelFlags.request()`` is the checked
``ModelRequest``; which runtime, pack and voice that means is decided by
``PocketTTS`` and the runtime registry, so a Python user gets exactly what
the command line gets.
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pocketcli.cli import flags
from pocketcli.cli.store_options import usage_error
from pocketcli.errors import FieldError, OptionConflict, UnknownNameError
from pocketcli.options import AUTO_RUNTIME, ModelRequest
from pocketcli.runtimes import registry

if TYPE_CHECKING:
    from pocketcli.api import ChosenVoice, PocketTTS

BACKENDS = ("pocket", "pockettts")


def notice(message: str) -> None:
    sys.stderr.write(f"pockettts: note: {message}\n")
    sys.stderr.flush()


@dataclass(frozen=True)
class ModelFlags:
    """The model flags of one command line, as given (``None``: not given)."""

    language: str | None = None
    runtime: str = AUTO_RUNTIME
    precision: str | None = None
    placement: str | None = None
    compute_units: str | None = None
    model_dir: Path | None = None
    config: str | None = None
    offline: bool = False

    def request(self, *, need_here: bool = True, quiet: bool = False) -> ModelRequest:
        """The flags as a checked ModelRequest; bad values and conflicts are usage
        errors (exit 2) naming the flags, found before anything is downloaded or
        loaded. A flag the runtime has no use for gets a notice (unless quiet)."""
        request = ModelRequest(
            **{f.name: getattr(self, f.name) for f in fields(self)}, progress=not quiet
        )
        try:
            checked = registry.check(request, need_here=need_here)
        except FieldError as exc:
            raise usage_error(exc) from None
        if not quiet:
            runtime = checked.runtime
            for field in registry.ignored_fields(checked):
                notice(f"{flags.flag_for(field)} has no effect with the {runtime} runtime; ignored")
        return checked


# field -> (annotation, the option's declaration)
_DECLARATIONS: dict[str, tuple[Any, Callable[[], Any]]] = {
    "language": (str | None, flags.language),
    "runtime": (str, flags.runtime),
    "precision": (str | None, flags.precision),
    "placement": (str | None, flags.placement),
    "compute_units": (str | None, flags.compute_units),
    "model_dir": (Path | None, flags.model_dir),
    "config": (str | None, flags.config),
    "offline": (bool, flags.offline),
}
MODEL: Any = None  # the default of a command's ``model: ModelFlags`` parameter


def takes_model_flags(
    *, only: tuple[str, ...] | None = None, language: Any = None, languages: bool = False
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Replaces the command's ``model`` parameter by the model flags (``only``
    some of them; ``language`` another declaration of ``--language``); the
    command gets them back as one ``ModelFlags``. With ``languages``,
    ``--language`` is repeatable and the command also gets ``languages`` (a list)."""
    wanted = only or tuple(_DECLARATIONS)

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        signature = inspect.signature(command)
        added = []
        for field in wanted:
            annotation, declare = _DECLARATIONS[field]
            default = declare()
            if field == "language" and language is not None:
                default = language
            if field == "language" and languages:
                annotation = list[str] | None
            added.append(
                inspect.Parameter(
                    f"model_{field}",
                    inspect.Parameter.KEYWORD_ONLY,
                    default=default,
                    annotation=annotation,
                )
            )

        @functools.wraps(command)
        def wrapper(**kwargs: Any) -> Any:
            given = {field: kwargs.pop(f"model_{field}") for field in wanted}
            if languages:
                kwargs["languages"] = given.pop("language", None)
            return command(model=ModelFlags(**given), **kwargs)

        params: list[inspect.Parameter] = []
        for param in signature.parameters.values():
            if param.name == "model":
                params += added
            elif param.name != "languages" or not languages:
                params.append(param.replace(kind=inspect.Parameter.KEYWORD_ONLY))
        wrapper.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
        return wrapper

    return decorate


def check_voice_name(choice: ModelRequest, voice: str | None) -> None:
    """Fails fast (exit 2, valid names listed) before any download or load."""
    if voice is None:
        return
    try:
        registry.spec_for(choice).check_voice(choice, voice)
    except (UnknownNameError, OptionConflict) as exc:  # other errors: exit 1, as at load
        raise usage_error(exc) from None


def load_model(choice: ModelRequest, quiet: bool = False) -> PocketTTS:
    """The PocketTTS for these options: a local pack, or one from the store."""
    from pocketcli.api import open_request

    return open_request(replace(choice, progress=not quiet))


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


def choose_voice(
    tts: PocketTTS,
    voice: str | None,
    voice_file: Path | None = None,
    clone_voice: Path | None = None,
    save_voice: Path | None = None,
    on_warning: Callable[[str], None] | None = None,
) -> ChosenVoice:
    """The library's voice choice (``tts.voices.choose``); without a callback
    (-q) its notices are dropped rather than raised as Python warnings."""
    quiet = lambda _note: None  # noqa: E731
    return tts.voices.choose(
        voice, voice_file, clone_voice, save_voice, on_warning=on_warning or quiet
    )
