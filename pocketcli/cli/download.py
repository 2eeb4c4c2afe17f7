"""``pockettts download``: fill the cache now so later runs need no network."""

from __future__ import annotations

from dataclasses import replace

import typer

from pocketcli import defaults
from pocketcli.cli import clickcompat as click
from pocketcli.cli import flags
from pocketcli.cli.model_options import (
    MODEL,
    ModelFlags,
    check_voice_name,
    takes_model_flags,
)
from pocketcli.runtimes import registry

HELP = """Download models (and default voices) into the cache for later, offline runs.

ONNX: fetches Kyutai's checkpoint and tokenizer at the revisions pocket-tts 4.0.1
pins and builds a pack; also the voices alba and the language's own voice (add
more with --voice). CoreML: fetches FluidAudio's v2.1 pack with only the models the
precision and placement need (voices included) and deletes the other FlowLM.
Prints one line per language: the language and the folder.

Examples:

  pockettts download

  pockettts download --language spanish --language german_24l --precision int8

  pockettts download --runtime coreml --language french_24l --precision int8

  pockettts download --language english --voice marius --voice eve

  pockettts download --offline      (checks the cache; no network)
"""


@takes_model_flags(
    only=("language", "runtime", "precision", "placement", "config", "offline"),
    language=flags.language(f"Language to fetch (default {defaults.LANGUAGE})", True),
    languages=True,
)
def download_command(
    model: ModelFlags = MODEL,
    languages: list[str] | None = None,
    voice: list[str] | None = flags.voice("Also fetch this built-in voice (repeatable)."),
    rebuild: bool = typer.Option(
        False, "--rebuild", help="Build the pack again, retrying the gated weights (ONNX)."
    ),
    quiet: bool = flags.quiet("No progress on stderr."),
) -> None:
    # Every language and voice is checked before the first download starts.
    requests = []
    for name in dict.fromkeys(languages or [None]):
        request = replace(model, language=name).request(
            need_here=False, quiet=quiet or bool(requests)
        )
        for extra in voice or ():
            check_voice_name(request, extra)
        requests.append(replace(request, rebuild=rebuild))
    if rebuild and not registry.spec_for(requests[0]).builds_packs:
        raise click.UsageError(
            f"--rebuild is for runtimes that build their packs; {requests[0].runtime} "
            "downloads its packs as published"
        )
    for request in requests:
        spec = registry.spec_for(request)
        path = spec.find_pack(request)
        if request.config is not None:
            typer.echo(f"{request.config}\t{path}")
            continue
        wanted = (None, *(voice or ()))  # None: the language's default voices
        spec.fetch_voices(request, wanted)
        typer.echo(f"{request.model_language}\t{path}")
