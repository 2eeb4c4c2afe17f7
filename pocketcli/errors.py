"""The errors every user-facing failure derives from.

The CLI turns a ``UserError`` into one line on stderr and exit status 1, and
the option errors (``UnknownNameError``, ``OptionConflict``) into a usage
error (exit 2); anything else is a bug and still gets one line (and a
traceback only with POCKETTTS_DEBUG=1).
"""


class UserError(Exception):
    """Bad input or environment that the user can fix; the message says how."""


class ModelOutputError(UserError):
    """The model produced numbers no audio can be made of (NaN, infinity, only silence)."""


class UnknownNameError(UserError, ValueError):
    """A language, voice, precision, placement or runtime that does not exist.

    Carries the option name and the valid values so a front end can turn it
    into a usage error that lists them.
    """

    def __init__(self, option: str, value: str, valid: tuple[str, ...], what: str = "") -> None:
        self.option = option
        self.value = value
        self.valid = valid
        self.detail = what
        detail = f" {what}" if what else ""
        super().__init__(
            f"unknown {option.lstrip('-')} {value!r}{detail}; choose from: {', '.join(valid)}"
        )


class OptionConflict(UserError, ValueError):
    """Two options that cannot go together, or one the chosen runtime cannot take.

    ``options`` names the flags involved (a front end shows it as a usage error).
    """

    def __init__(self, message: str, *options: str) -> None:
        self.options = options
        super().__init__(message)


class RuntimeUnavailable(UserError):
    """The runtime asked for cannot run on this system (the message says why)."""
