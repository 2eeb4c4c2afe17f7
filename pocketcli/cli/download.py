"""``pockettts download``: fill the cache now so later runs need no network."""

from __future__ import annotations

import typer

from pocketcli.cli import clickcompat as click
from pocketcli.cli.store_options import choose_runtime, help_text, usage_error

HELP = help_text("""Download models (and default voices) into the cache for later, offline runs.

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
""")


def download_command(
    language: list[str] | None = typer.Option(
        None, "--language", help="Language to fetch (repeatable; default english)."
    ),
    runtime: str = typer.Option("auto", "--runtime", help="auto, onnx or coreml."),
    precision: str | None = typer.Option(
        None, "--precision", help="onnx: fp32 (default) or int8; coreml: fp16 (default) or int8."
    ),
    placement: str = typer.Option("gpu", "--placement", help="CoreML: gpu or ane."),
    config: str | None = typer.Option(
        None, "--config", help="ONNX: a Kyutai config YAML (path, https:// or hf://)."
    ),
    voice: list[str] | None = typer.Option(
        None, "-v", "--voice", help="ONNX: also fetch this built-in voice (repeatable)."
    ),
    rebuild: bool = typer.Option(
        False, "--rebuild", help="ONNX: build the pack again, retrying the gated weights."
    ),
    offline: bool = typer.Option(False, "--offline", help="Never touch the network."),
    quiet: bool = typer.Option(False, "-q", "--quiet", help="No progress on stderr."),
) -> None:
    from pocketcli import store

    chosen = choose_runtime(runtime)
    try:
        precision = store.check_precision(chosen, precision or store.default_precision(chosen))
        if chosen == "coreml":
            store.check_placement(placement)
    except store.UnknownNameError as exc:
        raise usage_error(exc) from None
    if config is not None and chosen == "coreml":
        raise click.UsageError("--config builds ONNX packs: use it with --runtime onnx")
    if config is not None and language:
        raise click.UsageError("--config and --language are exclusive")
    languages = list(dict.fromkeys(language or ([] if config else ["english"])))
    try:
        for name in languages:
            store.check_language(chosen, name)
            for extra in voice or ():
                store.check_voice(extra, name)
    except store.UnknownNameError as exc:
        raise usage_error(exc) from None
    if config is not None:
        path = store.resolve_onnx_pack(
            None, config, precision, offline, progress=not quiet, rebuild=rebuild
        )
        typer.echo(f"{config}\t{path}")
        return
    for name in languages:
        if chosen == "coreml":
            path = store.resolve_coreml_pack(
                name, precision, placement, offline, progress=not quiet
            )
        else:
            path = store.resolve_onnx_pack(
                name, None, precision, offline, progress=not quiet, rebuild=rebuild
            )
            wanted = ["alba", store.native_voice(name), *(voice or ())]
            for item in dict.fromkeys(store.canonical_voice(v) for v in wanted if v):
                if item in store.known_voices(name):
                    store.resolve_voice(name, item, offline, progress=not quiet)
        typer.echo(f"{name}\t{path}")
