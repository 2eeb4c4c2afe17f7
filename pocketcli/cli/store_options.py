"""What the store's commands share: the runtime choice and usage errors from the catalog."""

from __future__ import annotations

import re
import sys

from pocketcli.cli import clickcompat as click

RUNTIME_CHOICES = ("auto", "onnx", "coreml")


def usage_error(exc: Exception) -> click.BadParameter:
    """An UnknownNameError as a usage error (exit 2) that lists the valid values."""
    valid = ", ".join(getattr(exc, "valid", ()))
    value = getattr(exc, "value", "")
    detail = getattr(exc, "detail", "")
    return click.BadParameter(
        f"{value!r}{' ' + detail if detail else ''}; choose from {valid}",
        param_hint=getattr(exc, "option", None),
    )


def choose_runtime(requested: str) -> str:
    """``auto`` is CoreML on a Mac that has the CoreML runtime, ONNX elsewhere."""
    if requested not in RUNTIME_CHOICES:
        raise click.BadParameter(
            f"{requested!r}; choose from {', '.join(RUNTIME_CHOICES)}", param_hint="--runtime"
        )
    if requested != "auto":
        return requested
    if sys.platform == "darwin":
        try:
            from pocketcli.runtimes import coreml  # noqa: F401
        except ImportError:
            return "onnx"
        return "coreml"
    return "onnx"


def help_text(text: str) -> str:
    """Joins the wrapped lines of each paragraph before "Examples:" (the help renderer
    keeps single newlines), so the prose reflows to the terminal's width."""
    prose, sep, examples = text.partition("Examples:")
    return re.sub(r"(?<!\n)\n(?!\n)", " ", prose) + sep + examples
