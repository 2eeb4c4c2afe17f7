"""The root of every user-facing error, and the errors about a value the caller gave.

Every error a user can fix derives from ``UserError`` (this module): the
CLI turns it into one line on stderr and exit status 1, the server into a
4xx answer. The errors about one value (``FieldError``: ``UnknownNameError``,
``OptionConflict``, ``OptionsError``) name the *field* the caller set
(``language``, ``model_dir``, ``temperature``), never a command-line flag;
each front end says them in its own words with ``named()`` (the CLI by its
flags, ``pocketcli.cli.flags``; the server by its JSON fields), and the CLI
makes them usage errors (exit 2). Errors of one area (a voice file, a
recording, a pack) are defined beside their code and derive from
``UserError``; anything else is a bug and still gets one line (and a
traceback only with POCKETTTS_DEBUG=1).
"""

from __future__ import annotations

from collections.abc import Mapping


class UserError(Exception):
    """Bad input or environment that the user can fix; the message says how."""


class ModelOutputError(UserError):
    """The model produced numbers no audio can be made of (NaN, infinity, only silence)."""


class FieldError(UserError, ValueError):
    """An error about values the caller set, by field name.

    ``template`` is the message with each field written ``{field}``; ``str()``
    says the field names, ``named(names)`` says them as a front end calls them
    (a field missing from ``names`` keeps its own name).
    """

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
    turn it into a usage error that lists them.
    """

    def __init__(self, field: str, value: str, valid: tuple[str, ...], what: str = "") -> None:
        self.value = value
        self.valid = valid
        self.detail = what
        detail = f" {what}" if what else ""
        # The value and the hint are the user's text: kept out of the template.
        self._tail = f" {value!r}{detail}; choose from: {', '.join(valid)}"
        super().__init__("unknown {" + field + "}", field)


class OptionConflict(FieldError):
    """Two fields that cannot go together, or one the chosen runtime cannot take.

    ``fields`` names the fields involved (a front end shows them by its own names).
    """

    @property
    def options(self) -> tuple[str, ...]:
        return self.fields


class OptionsError(FieldError):
    """A value of ``SpeakOptions`` that cannot be used: ``field`` names it,
    ``problem`` says what is wrong (``str()`` is both)."""

    def __init__(self, field: str, problem: str) -> None:
        self.problem = problem
        self._tail = f" {problem}"
        super().__init__("{" + field + "}", field)


class RuntimeUnavailable(UserError):
    """The runtime asked for cannot run on this system (the message says why)."""
