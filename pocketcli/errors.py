"""The error every user-facing failure derives from.

The CLI turns a ``UserError`` into one line on stderr and exit status 1;
anything else is a bug and still gets one line (and a traceback only with
POCKETTTS_DEBUG=1).
"""


class UserError(Exception):
    """Bad input or environment that the user can fix; the message says how."""


class ModelOutputError(UserError):
    """The model produced numbers no audio can be made of (NaN, infinity, only silence)."""
