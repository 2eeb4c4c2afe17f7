"""``pockettts voices``: the built-in voices, where they come from and what is downloaded."""

from __future__ import annotations

import json

import typer

from pocketcli.cli.store_options import help_text, usage_error

HELP = help_text("""List the built-in voices, their language of origin and what is downloaded.

21 English-trained voices plus the native voices estelle (French), lola
(Spanish), juergen (German), rafael (Portuguese) and giovanni (Italian), and daan
(Dutch) for the Dutch models. DOWNLOADED says whether a voice is in the cache for
the ONNX runtime (Kyutai voice states) and the CoreML runtime (FluidAudio pack).
Reads the cache only, never the network. FluidAudio's name af_heart is alba.

Examples:

  pockettts voices

  pockettts voices --language spanish

  pockettts voices --language german_24l --json
""")


def _downloaded(status) -> str:
    where = [name for name, done in (("onnx", status.onnx), ("coreml", status.coreml)) if done]
    return ", ".join(where) or "-"


def voices_command(
    language: str = typer.Option("english", "--language", help="Language (model) to list."),
    as_json: bool = typer.Option(False, "--json", help="JSON on stdout instead of a table."),
) -> None:
    from pocketcli import store

    try:
        store.check_language("onnx", language)
    except store.UnknownNameError as exc:
        raise usage_error(exc) from None
    statuses = store.voice_statuses(language)
    if as_json:
        typer.echo(
            json.dumps({"language": language, "voices": [s.to_dict() for s in statuses]}, indent=2)
        )
        return
    typer.echo(f"{'VOICE':<16}{'ORIGIN':<12}{'DOWNLOADED':<14}NOTE")
    for s in statuses:
        note = ", ".join(
            n for n, on in (("default", s.default), (f"{language}'s own", s.native)) if on
        )
        typer.echo(f"{s.name:<16}{s.origin:<12}{_downloaded(s):<14}{note}".rstrip())
