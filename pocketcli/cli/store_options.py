"""What the commands share: usage errors from the library's option errors, help text."""

from __future__ import annotations

import re

from pocketcli.cli import clickcompat as click
from pocketcli.errors import UserError


def usage_error(exc: UserError) -> click.UsageError:
    """A library error as a usage error (exit 2) in the user's words: an unknown
    name lists the valid values, a conflict names the options by their flags."""
    from pocketcli.cli.flags import flag_for, in_flags
    from pocketcli.errors import UnknownNameError

    if isinstance(exc, UnknownNameError):
        valid = ", ".join(exc.valid)
        detail = exc.detail_in({field: flag_for(field) for field in exc.fields})
        said = f"{exc.shown_value()}{' ' + detail if detail else ''}{exc.suggestion()}"
        error = click.BadParameter(f"{said}; choose from {valid}", param_hint=flag_for(exc.field))
        error.whole = True  # type: ignore[attr-defined]  # the value is bounded: list it all
        return error
    return click.UsageError(in_flags(exc))


def help_text(text: str) -> str:
    """A command's help as written: the prose reflows to the terminal's width,
    each example after "Examples:" stays one line (click's ``\\b`` marker), and
    nothing is read as markup (``[pause:1s]`` is an example, not a style)."""
    prose, sep, examples = text.partition("Examples:")
    paragraphs = [p.strip("\n") for p in re.split(r"\n\s*\n", examples)]
    kept = "\n\n".join(f"\b\n{p}" for p in paragraphs if p.strip())
    return prose + sep + ("\n\n" + kept + "\n" if kept else "")
