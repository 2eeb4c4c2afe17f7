"""Every user-facing error: one root, one module, one way to say each.

Everything the library raises on purpose derives from ``PocketTTSError``
(``UserError`` is the same class, its old name): catch it to catch them all.
Each error is defined here, so this page is the list of what a caller can
meet; the modules that raise them re-export their own (``pocketcli.voices.state.VoiceError``
is ``pocketcli.errors.VoiceError``).

How a front end says them is decided by the error itself, not by the front end:

- ``str(exc)`` is the message, one line that names the user's value and the cause;
- ``exit_code``: the CLI's exit status, 2 (a usage error: a value the caller
  gave, ``FieldError``, or text that cannot be spoken) or 1 (everything else:
  a file, the network, the model);
- ``http_status``: the server's status (400: the request; 500: the server's own
  files), always in OpenAI's error shape (``pocketcli.serve.apierrors``);
- ``FieldError`` and its kind name the *field* the caller set (``language``,
  ``model_dir``, ``temperature``), never a command-line flag; ``named(names)``
  says them as a front end calls them (the CLI by its flags,
  ``pocketcli.cli.flags.in_flags``; the server by its JSON fields, which are the
  fields' own names).

The translators are ``pocketcli.cli.main._report`` (one line on stderr, the exit
status; a usage error adds the line that points at ``--help``) and
``pocketcli.serve.apierrors.as_api_error``. Anything that is not a
``PocketTTSError`` is a bug and still gets one line (a traceback only with
POCKETTTS_DEBUG=1). Exceptions that never reach a user are not here: the
server's queue and protocol signals (``frontends.admission.Busy``,
``frontends.turns.TurnError``, ...) become API errors or protocol frames where they
are raised, and ``interrupts.Terminated`` is a signal, not an error.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = [
    "AccessRefused",
    "AudioError",
    "AudioReadError",
    "BackendError",
    "BundleError",
    "CheckpointError",
    "ConfigError",
    "CoreMLUnavailable",
    "EmptyTextError",
    "FieldError",
    "FieldHint",
    "ManifestWriteError",
    "MarkupError",
    "ModelMissing",
    "ModelOutputError",
    "NoOutputDevice",
    "OfflineMiss",
    "OptionConflict",
    "OptionsError",
    "OutputRefused",
    "PackError",
    "PathError",
    "PlaybackError",
    "PocketTTSError",
    "PromptError",
    "RuntimeUnavailable",
    "SessionClosed",
    "SessionFull",
    "StoreError",
    "TensorFileError",
    "TokenizerError",
    "UnknownLanguageError",
    "UnknownNameError",
    "UserError",
    "VoiceCloningUnavailable",
    "VoiceError",
    "VoiceHint",
    "VoiceNotChosen",
    "WebPackError",
    "WordsUnavailable",
]


class PocketTTSError(Exception):
    """The root: bad input or environment that the user can fix; the message says how."""

    exit_code = 1  # the CLI's exit status (2: a usage error)
    http_status = 400  # the server's answer


UserError = PocketTTSError  # the root's first name, kept for callers that catch it


class ModelOutputError(UserError):
    """The model produced numbers no audio can be made of (NaN, infinity, only silence)."""


class FieldError(UserError, ValueError):
    """An error about values the caller set, by field name.

    ``template`` is the message with each field written ``{field}``; ``str()``
    says the field names, ``named(names)`` says them as a front end calls them
    (a field missing from ``names`` keeps its own name).
    """

    exit_code = 2  # a value the caller gave: a usage error
    _tail = ""  # text after the template that holds the user's values (never a field)

    def __init__(self, template: str, *fields: str) -> None:
        self.template = template
        self.fields = fields
        super().__init__(self.named({}))

    @property
    def field(self) -> str:
        """The first (main) field the error is about."""
        return self.fields[0] if self.fields else ""

    def named(self, names: Mapping[str, str]) -> str:
        text = self.template
        for field in self.fields:
            text = text.replace("{" + field + "}", names.get(field, field))
        return text + self._tail


class UnknownNameError(FieldError):
    """A language, voice, precision, placement or runtime that does not exist.

    Carries the field, the value and the valid values, so a front end can
    turn it into a usage error that lists them. ``what`` (a hint after the
    value) may name other fields as ``{field}``, listed in ``mentions``.
    """

    def __init__(
        self,
        field: str,
        value: str,
        valid: tuple[str, ...],
        what: str = "",
        mentions: tuple[str, ...] = (),
    ) -> None:
        self.value = value
        self.valid = valid
        self.detail = what
        super().__init__("unknown {" + field + "}", field, *mentions)

    def detail_in(self, names: Mapping[str, str]) -> str:
        """The hint after the value, its fields said as ``names`` says them."""
        text = self.detail
        for field in self.fields[1:]:
            text = text.replace("{" + field + "}", names.get(field, field))
        return text

    def shown_value(self) -> str:
        """The value as quoted in a message: bounded (it may be a whole text typed where a
        name was expected), so the list of valid names is never cut for it."""
        value = repr(self.value)
        return value if len(value) <= MAX_SHOWN_VALUE else value[: MAX_SHOWN_VALUE - 4] + "...'"

    def suggestion(self) -> str:
        """``did you mean 'french'?`` for a close valid name (a language's code, a prefix,
        a near spelling), else nothing."""
        match = close_match(self.value, self.valid)
        return f" (did you mean {match!r}?)" if match is not None else ""

    def named(self, names: Mapping[str, str]) -> str:
        # The value and the hint are the user's text: never searched for fields.
        detail = self.detail_in(names)
        head = "unknown " + self.field  # the kind in words ("unknown voice 'x'")
        said = f"{head} {self.shown_value()}{' ' + detail if detail else ''}{self.suggestion()}"
        return f"{said}; choose from: " + ", ".join(self.valid)


MAX_SHOWN_VALUE = 60  # characters of a refused name quoted back
# The codes people type for a language (ISO 639-1 and 639-2), for "did you mean".
LANGUAGE_CODES = {
    **dict.fromkeys(("en", "eng"), "english"),
    **dict.fromkeys(("fr", "fra", "fre"), "french"),
    **dict.fromkeys(("de", "deu", "ger"), "german"),
    **dict.fromkeys(("es", "spa"), "spanish"),
    **dict.fromkeys(("it", "ita"), "italian"),
    **dict.fromkeys(("pt", "por"), "portuguese"),
    **dict.fromkeys(("nl", "nld", "dut"), "dutch"),
}


def close_match(value: str, valid: tuple[str, ...]) -> str | None:
    """The valid name ``value`` most likely meant: the language its code names, the
    shortest name it starts, or difflib's closest spelling; None when none is close."""
    import difflib

    key = str(value).strip().lower()
    if not key or not valid:
        return None
    named = LANGUAGE_CODES.get(key.split("-")[0].split("_")[0])
    if named in valid:
        return named
    lowered = {name.lower(): name for name in valid}
    if key in lowered:
        return lowered[key]
    if starts := [name for name in valid if name.lower().startswith(key)]:
        return min(starts, key=len)
    close = difflib.get_close_matches(key, list(lowered), n=1, cutoff=0.6)
    return lowered[close[0]] if close else None


class OptionConflict(FieldError):
    """Two fields that cannot go together, or one the chosen runtime cannot take.

    ``fields`` names the fields involved (a front end shows them by its own names).
    """

    @property
    def options(self) -> tuple[str, ...]:
        return self.fields


class FieldHint(FieldError):
    """Not a bad value but a situation (no Ray here, a cluster too small, a link in
    the way) whose way out is a field the caller sets; the message names that field."""

    exit_code = 1  # the situation, not the value, is what is wrong


class OptionsError(FieldError):
    """A value of ``SpeakOptions`` that cannot be used: ``field`` names it,
    ``problem`` says what is wrong (``str()`` is both)."""

    def __init__(self, field: str, problem: str) -> None:
        self.problem = problem
        self._tail = f" {problem}"
        super().__init__("{" + field + "}", field)


class RuntimeUnavailable(UserError):
    """The runtime asked for cannot run on this system (the message says why)."""


class BackendError(UserError, RuntimeError):
    """A runtime failed while running a network (the message names the model and the cause)."""


class WordsUnavailable(UserError, RuntimeError):
    """Word timings were asked of a model or pack that cannot give them (the message says
    why, in one line)."""


class SessionClosed(UserError, RuntimeError):
    """``Session.enqueue`` after ``finish``, ``cancel`` or an error ended the session."""


class SessionFull(UserError, RuntimeError):
    """``Session.enqueue`` while the session's queue of texts is full (its reader is behind)."""


class PathError(UserError):
    """An input that cannot be read or an output that cannot be written."""


class OutputRefused(FieldError, PathError):
    """An output that would replace what it must not (a folder of the user's, a file, a
    link, a special file) or whose folder does not exist: refused before any work. The
    field is ``force`` when setting it would allow the replacement."""

    exit_code = 2  # the path the caller gave


class ConfigError(UserError, ValueError):
    """The YAML is not a Pocket TTS config we can build."""


class CheckpointError(UserError, ValueError):
    """The checkpoint cannot be read or does not match its config."""


class TensorFileError(UserError, ValueError):
    """The file is not a well-formed safetensors file (or holds a tensor we cannot read)."""


class TokenizerError(UserError, ValueError):
    """A tokenizer file is missing, unreadable or does not fit the model."""


# Text


class EmptyTextError(UserError, ValueError):
    """The text has nothing left to speak once whitespace (and deletions) are removed."""

    exit_code = 2  # the text the caller gave


class MarkupError(UserError, ValueError):
    """Malformed pause marker or SSML; `line` and `column` count from 1."""

    exit_code = 2  # the text the caller gave

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(f"{message} at line {line}, column {column}")
        self.line = line
        self.column = column


class UnknownLanguageError(UserError, ValueError):
    """The language id has no normaliser; the message lists the supported ones."""


# Audio


class AudioError(UserError):
    """The audio cannot be written as asked (unknown format, encoder failure)."""


class AudioReadError(UserError, ValueError):
    """An audio file cannot be read: missing, corrupt or in a format we do not decode."""


class PlaybackError(UserError):
    """No playback possible here: no PortAudio, no sounddevice, no such device."""


class NoOutputDevice(PlaybackError, FieldHint):
    """No sound output device at all: writing a file (the ``output`` field) is the way out."""


# Voices


class VoiceError(UserError, ValueError):
    """A voice file is unreadable or does not fit the loaded model."""


class VoiceCloningUnavailable(VoiceError):
    """The pack was built from weights without voice cloning (or without the encoder)."""


class VoiceHint(VoiceError, FieldHint):
    """A voice file that cannot serve as given, whose way out is a field (named in it)."""


class VoiceNotChosen(VoiceHint):
    """A file holds several voices and the ``voice`` field names none of them."""


class PromptError(VoiceError):
    """The recording cannot be used as a voice prompt (too short, silent, NaN, ...)."""


# Packs and runtimes


class PackError(UserError, ValueError):
    """A pack directory is missing, incomplete or not one of ours."""


class ModelMissing(PackError):
    """No file for a model in a pack (optional models are looked for this way)."""


class WebPackError(PackError):
    """A browser pack folder is incomplete or inconsistent."""


class BundleError(PackError):
    """A bundle folder is incomplete, inconsistent or not a KevinAHM v2 bundle."""


class CoreMLUnavailable(UserError):
    """Core ML cannot run on this system (the message says why, in one line)."""


# The store (downloads and the cache)


class StoreError(UserError):
    """A download or cache problem; the message says how to get past it."""


class AccessRefused(StoreError):
    """The Hub refused a repository (401/403): gated, private, or no token."""

    def __init__(self, message: str, repo: str) -> None:
        super().__init__(message)
        self.repo = repo


class OfflineMiss(StoreError, FieldHint):
    """Not in the cache, and working offline (the ``offline`` field) forbids fetching it."""


# Batch runs


class ManifestWriteError(UserError):
    """A record could not be written (a full disk): the run cannot go on without it."""
