"""``pockettts voices``: the built-in voices, where they come from and what is downloaded."""

from __future__ import annotations

import json

import typer

from pocketcli.cli import flags
from pocketcli.cli.model_options import MODEL, ModelFlags, notice, takes_model_flags
from pocketcli.cli.store_options import usage_error
from pocketcli.errors import UnknownNameError

HELP = """List the built-in voices, their language of origin and what is downloaded.

21 English-trained voices plus the native voices estelle (French), lola
(Spanish), juergen (German), rafael (Portuguese) and giovanni (Italian), and daan
(Dutch) for the Dutch models. DOWNLOADED says whether a voice is in the cache for
each runtime (ONNX: Kyutai voice states; CoreML: FluidAudio pack). With
--model-dir, the voices a local pack carries, and for a pack built for a
language that language's built-in voices (fetched on first use). Reads the
cache only, never the network. FluidAudio's name af_heart is alba.

Examples:

  pockettts voices

  pockettts voices --language spanish

  pockettts voices --language german_24l --json

  pockettts voices --model-dir ./pack
"""


def _downloaded(status) -> str:
    where = [name for name, done in status.to_dict()["downloaded"].items() if done]
    return ", ".join(where) or "-"


@takes_model_flags(
    only=("language", "model_dir", "runtime"), language=flags.language("Language (model) to list")
)
def voices_command(
    model: ModelFlags = MODEL,
    as_json: bool = typer.Option(False, "--json", help="JSON on stdout instead of a table."),
) -> None:
    from pocketcli import store
    from pocketcli.runtimes import registry

    model_dir, language = model.model_dir, model.language
    if model_dir is not None:
        choice = model.request(need_here=False, quiet=True)
        spec = registry.spec_for(choice)
        names = spec.pack_voices(model_dir)
        pack_language = spec.pack_language(model_dir)
        if pack_language is not None:  # -v also takes that language's built-in voices
            names = tuple(dict.fromkeys([*names, *spec.voices(pack_language)]))
        if as_json:
            report = {"model_dir": str(model_dir), "language": pack_language, "voices": list(names)}
            typer.echo(json.dumps(report, indent=2))
            return
        typer.echo("VOICE")
        for name in names:
            typer.echo(name)
        if not names:
            notice(f"{model_dir} carries no voices: use --voice-file or --clone-voice")
        return
    language = language or registry.DEFAULT_LANGUAGE
    if language not in registry.all_languages():
        raise usage_error(UnknownNameError("language", language, registry.all_languages()))
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
