"""What the commands share: usage errors from the library's option errors, help text."""

from __future__ import annotations

import re

from pocketcli.cli import clickcompat as click


def usage_error(exc: Exception) -> click.UsageError:
    """An option error from the library as a usage error (exit 2): an unknown
    name lists the valid values, a conflict names the options."""
    from pocketcli.cli.flags import flag_for, in_flags
    from pocketcli.errors import FieldError, UnknownNameError

    if isinstance(exc, UnknownNameError):
        valid = ", ".join(exc.valid)
        detail = f" {exc.detail}" if exc.detail else ""
        return click.BadParameter(
            f"{exc.value!r}{detail}; choose from {valid}", param_hint=flag_for(exc.field)
        )
    if isinstance(exc, FieldError):
        return click.UsageError(in_flags(exc))
    return click.UsageError(str(exc))


def help_text(text: str) -> str:
    """A command's help as written: the prose reflows to the terminal's width,
    each example after "Examples:" stays one line (click's ``\\b`` marker), and
    nothing is read as markup (``[pause:1s]`` is an example, not a style)."""
    prose, sep, examples = text.partition("Examples:")
    paragraphs = [p.strip("\n") for p in re.split(r"\n\s*\n", examples)]
    kept = "\n\n".join(f"\b\n{p}" for p in paragraphs if p.strip())
    return prose + sep + ("\n\n" + kept + "\n" if kept else "")
