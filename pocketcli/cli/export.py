"""``pockettts export --format kevinahm-v2 OUT/``: write a model in another project's layout."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from pocketcli import defaults
from pocketcli.cli import checks, flags
from pocketcli.cli import clickcompat as click
from pocketcli.errors import UnknownNameError

HELP = """Write a model in another project's ONNX layout.

--format kevinahm-v2: a KevinAHM v2 ONNX bundle (the layout of
KevinAHM/pocket-tts-onnx onnx/<bundle>/, which sherpa-onnx-era runtimes,
pocketsynth and web demos load): bundle.json, the tokenizer,
bos_before_voice.npy and the five graphs (text_conditioner, mimi_encoder,
flow_lm_main, flow_lm_flow, mimi_decoder), each also as _int8.

OUT is never a file, a link or a special file, and its folder must exist (it is
not created). A folder already there is replaced only when it is empty or is an
export of the same format that this command wrote (its pocket_tts.json or
pockettts.json, and only the files an export has); anything else is refused
unless --force says to replace it.

The model is chosen as for 'tts': --language (fetched at the revisions pocket-tts
4.0.1 pins) or --config. --precision fp32 writes the fp32 graphs only; int8 (the
default) writes both, as the published bundles have. No PyTorch is needed.
The bundle's name (bundle.json's bundle_name) is the language, or the config
file's name without .yaml. Without voice-cloning weights there is no mimi_encoder.

--format web: the browser pack (Pocket-TTS-ONNX-WebGPU) that web pages run with
ONNX Runtime Web: onnx/text_embed.onnx, onnx/flow_lm.onnx (4-bit MatMulNBits,
flow head inside), onnx/mimi_decoder.onnx (int8 DequantizeLinear),
voice_alba.bin (the Mimi encoding of --voice-clip; needs the voice-cloning
weights), bos_emb.bin, the tokenizer and pocket_tts.json. Its precision is fixed by
the layout, so --precision is refused.

Examples:

  pockettts export --format kevinahm-v2 bundles/english_2026-04 --language english_2026-04

  pockettts export --format web web/english --voice-clip alba.wav

  pockettts export --format kevinahm-v2 out/dutch --language dutch --precision fp32

  pockettts export --format kevinahm-v2 out/mine --config my_model.yaml
"""

FORMATS = ("kevinahm-v2", "web")


def export_command(
    out: Path = typer.Argument(
        ...,
        metavar="OUT",
        help="Folder to write: new (in an existing folder), empty, or one this command"
        " wrote before (replaced); anything else needs --force.",
    ),
    format_: str = typer.Option(
        ...,
        "--format",
        help=f"Layout to write: {', '.join(FORMATS)}.",
        callback=flags.lower,
        autocompletion=flags.complete_from(FORMATS),
    ),
    language: str | None = flags.language(
        f"Language model to export (default {defaults.LANGUAGE})"
    ),
    config: str | None = flags.config(),
    precision: str | None = typer.Option(
        None,
        "--precision",
        help="kevinahm-v2: fp32, or int8 (fp32 and int8 graphs, the default).",
        callback=flags.lower,
    ),
    voice_clip: Path | None = typer.Option(
        None,
        "--voice-clip",
        metavar="AUDIO",
        help="web: the clip whose Mimi encoding becomes voice_alba.bin (required).",
    ),
    offline: bool = flags.offline(),
    quiet: bool = flags.quiet("No progress on stderr."),
    force: bool = typer.Option(
        False,
        "--force",
        help="Replace OUT even when it is a folder holding files this command did not"
        " write (they are deleted). A file, link or special file is never replaced, nor a"
        " folder holding this run's inputs (the config, its checkpoint, the voice clip).",
    ),
) -> None:
    from pocketcli.cli.store_options import usage_error

    if format_ not in FORMATS:
        raise usage_error(UnknownNameError("format", format_, FORMATS))
    if format_ == "web" and precision is not None:
        raise click.UsageError(
            f"--precision {precision}: the browser pack's precision is fixed (4-bit flow LM"
            " and text table, int8 Mimi); leave --precision out"
        )
    precision = precision or defaults.EXPORT_PRECISION
    if precision not in ("fp32", "int8"):
        raise usage_error(UnknownNameError("precision", precision, ("fp32", "int8")))
    if format_ == "web" and voice_clip is None:
        raise click.UsageError("--format web needs --voice-clip AUDIO (the pack's voice)")
    if language is not None and config is not None:
        raise click.UsageError("--config and --language both name the model: give one")
    if language is not None:
        from pocketcli.store.catalog import known_languages

        if language not in known_languages("onnx"):
            raise usage_error(UnknownNameError("language", language, known_languages("onnx")))
    from pocketcli.atomic import check_folder_output
    from pocketcli.packs.web_layout import WEB_FOLDER

    checks.folder_keeps_inputs(out, [("--config", config), ("--voice-clip", voice_clip)])

    if format_ == "web":
        check_folder_output(out, WEB_FOLDER, force)  # before any download or build
    from pocketcli.packs.kevinahm.export import BUNDLE_FOLDER, export_bundle
    from pocketcli.store.onnx import model_files

    if format_ != "web":
        check_folder_output(out, BUNDLE_FOLDER, force)

    checkpoint, model_config, tokenizer, source = model_files(
        language, config, offline, progress=not quiet
    )
    checks.folder_keeps_inputs(out, [("checkpoint", checkpoint), ("tokenizer", tokenizer)])
    name = source.get("language") or Path(str(source["name"])).name.removesuffix(".yaml")

    def say(message: str) -> None:
        if not quiet:
            sys.stderr.write(f"pockettts: {message}\n")

    if format_ == "web":
        from pocketcli.packs.web import export_web_pack
        from pocketcli.voices.prompt import load_prompt

        assert voice_clip is not None
        clip = load_prompt(voice_clip, model_config.mimi.sample_rate)
        export_web_pack(checkpoint, model_config, tokenizer, clip, out, source, say, force=force)
        typer.echo(str(out))
        return
    precisions = ("fp32",) if precision == "fp32" else ("fp32", "int8")
    export_bundle(
        checkpoint, model_config, tokenizer, out, name, precisions, source, say, force=force
    )
    typer.echo(str(out))
