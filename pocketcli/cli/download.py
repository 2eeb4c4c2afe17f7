"""``pockettts download``: fill the cache now so later runs need no network."""

from __future__ import annotations

from dataclasses import replace

import typer

from pocketcli.cli import clickcompat as click
from pocketcli.cli import flags
from pocketcli.cli.model_options import check_voice_name, validate_choice

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


def download_command(
    language: list[str] | None = flags.language("Language to fetch (default english)", True),
    runtime: str = flags.runtime(),
    precision: str | None = flags.precision(),
    placement: str | None = flags.placement(),
    config: str | None = flags.config(),
    voice: list[str] | None = flags.voice("Also fetch this built-in voice (repeatable)."),
    rebuild: bool = typer.Option(
        False, "--rebuild", help="Build the pack again, retrying the gated weights (ONNX)."
    ),
    offline: bool = flags.offline(),
    quiet: bool = flags.quiet("No progress on stderr."),
) -> None:
    languages = list(dict.fromkeys(language or [None]))
    # Every language and voice is checked before the first download starts.
    requests = []
    for name in languages:
        request = validate_choice(
            None,
            name,
            config,
            runtime,
            precision,
            None,
            placement,
            offline,
            need_here=False,
            quiet=quiet or bool(requests),
        )
        for extra in voice or ():
            check_voice_name(request, extra)
        requests.append(replace(request, rebuild=rebuild))
    if rebuild and not requests[0].spec.builds_packs:
        raise click.UsageError(
            f"--rebuild is for runtimes that build their packs; {requests[0].runtime} "
            "downloads its packs as published"
        )
    for request in requests:
        path = request.spec.find_pack(request)
        if request.config is not None:
            typer.echo(f"{request.config}\t{path}")
            continue
        wanted = (None, *(voice or ()))  # None: the language's default voices
        request.spec.fetch_voices(request, wanted)
        typer.echo(f"{request.model_language}\t{path}")
