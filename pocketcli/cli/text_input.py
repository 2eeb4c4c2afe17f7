"""The text a command speaks or prints: from an argument or standard input, checked once.

Empty, binary (NUL bytes) or non-UTF-8 input is a usage error (exit 2) in
every subcommand, with the same words.
"""

from __future__ import annotations

import sys

from pocketcli.cli import clickcompat as click
from pocketcli.cli.stdio import was_closed


def read_text(words: str | None, what: str = "TEXT, --text") -> str:
    """``words`` if given, else standard input (unless it is a terminal), checked."""
    if words is None:
        if sys.stdin is None or was_closed("stdin") or sys.stdin.isatty():
            raise click.UsageError(f"no text: give {what}, or pipe text on standard input")
        data = sys.stdin.buffer.read()
        try:
            words = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise click.UsageError(f"standard input is not UTF-8 text (byte {exc.start})") from None
    else:
        try:  # argv bytes that are not UTF-8 arrive as lone surrogates (surrogateescape)
            words.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise click.UsageError(
                f"the text argument is not UTF-8 text (character {exc.start})"
            ) from None
    if "\x00" in words:
        raise click.UsageError("the text contains NUL bytes: is it a binary file?")
    if not words.strip():
        raise click.UsageError("the text is empty")
    return words
