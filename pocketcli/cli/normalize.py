"""``pockettts normalize``: print what would be spoken, so users can see and script it."""

from __future__ import annotations

import sys

import typer

from pocketcli import defaults
from pocketcli.cli import clickcompat as click
from pocketcli.cli import flags
from pocketcli.cli.text_input import read_text
from pocketcli.options import DEFAULT_LANGUAGE

# Spelled out here so `--help` does not import the normaliser (num2words is slow
# to import); a test checks it equals pocketcli.normalize.SUPPORTED_LANGUAGES.
LANGUAGES = ("english", "french", "german", "italian", "portuguese", "spanish", "dutch")

HELP = """Print TEXT (or standard input) as it would be spoken: numbers, dates, money,
units, abbreviations and symbols in words, with pauses shown as [pause 0.50s].

Examples:

  pockettts normalize "Dr. Smith paid $1,234.56 on 2024-03-15."

  pockettts normalize "Am 3. März um 14:30 Uhr" --language german

  pockettts normalize "<speak>Wait<break time='1s'/>now</speak>"

  echo "Visit www.example.com [pause:1.5s] thanks" | pockettts normalize --urls drop
"""

_MODES = ("read", "drop")


def _mode(value: str, flag: str) -> str:
    value = value.strip().lower()
    if value not in _MODES:
        raise click.BadParameter(f"{value!r}; choose from {', '.join(_MODES)}", param_hint=flag)
    return value


def normalize_command(
    text_arg: str | None = typer.Argument(None, metavar="TEXT", help="The text to read."),
    language: str = typer.Option(
        DEFAULT_LANGUAGE,
        "-l",
        "--language",
        metavar="LANG",
        callback=flags.lower,
        autocompletion=flags.complete_language,
        help=f"Language (a model id works too, e.g. french_24l): {', '.join(LANGUAGES)}.",
    ),
    ssml: bool | None = typer.Option(
        None,
        "--ssml/--no-ssml",
        help="Read the text as SSML (default: when it starts with <speak>).",
    ),
    urls: str = typer.Option(
        defaults.WEB_ADDRESSES,
        "--urls",
        metavar="MODE",
        help="read or drop URLs.",
        autocompletion=flags.complete_from(_MODES),
    ),
    emails: str = typer.Option(
        defaults.WEB_ADDRESSES,
        "--emails",
        metavar="MODE",
        help="read or drop e-mail addresses.",
        autocompletion=flags.complete_from(_MODES),
    ),
) -> None:
    urls, emails = _mode(urls, "--urls"), _mode(emails, "--emails")
    words = read_text(text_arg, "TEXT")
    from pocketcli.normalize import (
        Pause,
        UnknownLanguageError,
        normalize_text,
        parse_markup,
    )

    try:
        items = parse_markup(
            words,
            ssml=ssml,
            language=language,
            on_warning=lambda m: sys.stderr.write(f"pockettts: warning: {m}\n"),
        )
    except UnknownLanguageError as exc:
        raise click.BadParameter(str(exc), param_hint="--language") from None
    said = [
        f"[pause {item.seconds:.2f}s]"
        if isinstance(item, Pause)
        else normalize_text(item.text, language, urls=urls, emails=emails)
        for item in items
    ]
    typer.echo(" ".join(s for s in said if s))
