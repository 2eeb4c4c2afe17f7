"""``pockettts inspect PATH``: what a voice file, a checkpoint, a model pack or a recording
is, and which models it fits.

Reads headers only (no tensor data), never the network; the models it fits are
the Kyutai configs pockettts knows (``pockettts download --language ...``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from pocketcli.store.catalog import catalog
from pocketcli.tensorfile import TensorFile, TensorFileError, dtype_counts, looks_like_safetensors

HELP = """Tell what PATH is: a voice file (its format, frames, width, dtype and the
models it fits), a Kyutai checkpoint (dtypes, parameters, the configs it fits), a
model folder (a pockettts pack or a KevinAHM v2 bundle: its layout, precisions,
languages, size and whether it can clone voices) or a recording (length, rate,
channels: what --clone-voice would take).

Voice formats are recognised from the content: Kyutai voice states (F32, BF16
or F16 caches), Kyutai's 'audio_prompt' embeddings, the web demos' voices.bin
and PTVB1 containers, .npy arrays and FluidAudio's raw .bin.

Examples:

  pockettts inspect cosette.safetensors

  pockettts inspect voices.bin --json

  pockettts inspect model.safetensors

  pockettts inspect bundles/english_2026-04

  pockettts inspect me.wav
"""


def _configs() -> list[tuple[str, Any]]:
    from pocketcli.config import ModelConfig

    return [
        (name, ModelConfig.from_yaml(entry.config_path()))
        for name, entry in sorted(catalog().kyutai.items())
    ]


def _fits_voice(entry, configs) -> list[str]:
    """Configs whose shapes the voice fits (its numbers are only right for the weights
    it was made with, which a file does not say)."""
    out = []
    for name, cfg in configs:
        t = cfg.flow_lm.transformer
        if entry.kind == "conditioning":
            fits = entry.width == t.d_model
        else:
            fits = (entry.layers, entry.kv_heads, entry.head_dim) == (
                t.num_layers,
                t.kv_heads,
                t.head_dim,
            )
        if fits:
            out.append(name)
    return out


def describe_voice_file(path: Path, model: list[tuple[str, Any]] | None = None) -> dict[str, Any]:
    """``model``: the (name, config) of a ``--model-dir``, checked before the known ones
    (a raw .bin voice of a custom model has its width)."""
    from pocketcli.voices.formats import identify, raw_bin_widths

    vf = identify(path)
    configs = [*(model or []), *_configs()]
    if vf.format == "fluidaudio-bin":  # the last guess, taken for any size a multiple of 4
        widths = sorted({cfg.flow_lm.transformer.d_model for _, cfg in configs})
        if not raw_bin_widths(path.stat().st_size, widths):
            from pocketcli.voices.formats import ACCEPTED
            from pocketcli.voices.state import VoiceError

            raise VoiceError(
                f"{path} is no file inspect knows: not a recording, a checkpoint or a model"
                f" folder, and its {path.stat().st_size} bytes fit no known model as"
                f" FluidAudio's raw .bin (a model pockettts does not list: give its"
                f" --model-dir); {ACCEPTED}"
            )
    voices = []
    for entry in vf.voices:
        item: dict[str, Any] = {
            "name": entry.name,
            "kind": entry.kind,
            "dtype": entry.dtype,
        }
        if entry.kind == "state":
            item.update(
                positions=entry.frames,
                layers=entry.layers,
                kv_heads=entry.kv_heads,
                head_dim=entry.head_dim,
            )
        else:
            item.update(frames=entry.frames, width=entry.width)
        if vf.format == "fluidaudio-bin":
            widths = sorted({cfg.flow_lm.transformer.d_model for _, cfg in configs})
            by_width = dict(raw_bin_widths(path.stat().st_size, widths))
            item["frames_by_width"] = by_width
            item["fits"] = [n for n, c in configs if c.flow_lm.transformer.d_model in by_width]
        elif entry.kind == "state" and entry.layers is None:
            item["fits"] = None  # a PTVB1 entry: shapes known once it is read
        else:
            item["fits"] = _fits_voice(entry, configs)
        voices.append(item)
    return {
        "file": str(path),
        "kind": "voice",
        "format": vf.format,
        "description": vf.description,
        "voices": voices,
        "ignored_tensors": list(vf.ignored),
    }


def describe_checkpoint(path: Path, f: TensorFile) -> dict[str, Any]:
    from pocketcli.packs.checkpoint import fits_config

    shapes = {name: info.shape for name, info in f.tensors.items()}
    layers = {
        name.split(".")[3] for name in shapes if name.startswith("flow_lm.transformer.layers.")
    }
    linear = shapes.get("flow_lm.input_linear.weight")
    return {
        "file": str(path),
        "kind": "checkpoint",
        "format": "safetensors checkpoint (pocket-tts TTSModel.state_dict layout)",
        "tensors": len(shapes),
        "parameters": sum(info.size for info in f.tensors.values()),
        "dtypes": dtype_counts(f.tensors),
        "d_model": linear[0] if linear else None,
        "flow_lm_layers": len(layers),
        "fits": [name for name, cfg in _configs() if fits_config(shapes, cfg)],
    }


def describe_recording(path: Path) -> dict[str, Any] | None:
    """A recording's header (what ``--clone-voice`` would read); None when it is none."""
    import soundfile as sf

    try:
        info = sf.info(str(path))
    except (sf.LibsndfileError, RuntimeError, OSError):
        return None
    return {
        "file": str(path),
        "kind": "recording",
        "format": info.format_info,
        "seconds": round(info.duration, 3),
        "sample_rate": info.samplerate,
        "channels": info.channels,
    }


def describe(path: Path, model_dir: Path | None = None) -> dict[str, Any]:
    from pocketcli.cli.checks import readable_file
    from pocketcli.voices.state import VoiceError

    if path.is_dir():
        from pocketcli.cli.inspect_folder import describe_folder

        return describe_folder(path)
    readable_file(path, "input")
    try:
        return _describe_file(path, _model_config(model_dir))
    except OSError as exc:  # /proc/self/mem, a disk error: name the file and the cause
        from pocketcli.atomic import os_reason

        raise VoiceError(f"cannot read {path}: {os_reason(exc)}") from None


def _model_config(model_dir: Path | None) -> list[tuple[str, Any]]:
    """The model of ``--model-dir`` as (name, config), loaded as ``tts`` would load it."""
    if model_dir is None:
        return []
    from pocketcli.api import PocketTTS

    return [(str(model_dir), PocketTTS.open(runtime="onnx", model_dir=model_dir).runtime.config)]


def _describe_file(path: Path, model: list[tuple[str, Any]]) -> dict[str, Any]:
    from pocketcli.voices.state import VoiceError

    size = path.stat().st_size
    with open(path, "rb") as fh:
        head = fh.read(16)
    if looks_like_safetensors(head, size):
        try:
            with TensorFile(path) as f:
                if any(name.startswith(("flow_lm.", "mimi.")) for name in f.tensors):
                    return describe_checkpoint(path, f)
        except TensorFileError as exc:
            raise VoiceError(str(exc)) from None
        return describe_voice_file(path, model)
    recording = None if head.startswith((b"PTVB1", b"\x93NUMPY")) else describe_recording(path)
    return recording if recording is not None else describe_voice_file(path, model)


def _text(report: dict[str, Any]) -> list[str]:
    if report["kind"] == "folder":
        from pocketcli.cli.inspect_folder import folder_text

        return folder_text(report)
    if report["kind"] == "recording":
        return [
            f"{report['file']}: recording ({report['format']}), {report['seconds']:.2f} s,"
            f" {report['sample_rate']} Hz, {report['channels']} channel(s);"
            " clone it with --clone-voice or `pockettts clone`"
        ]
    if report["kind"] == "checkpoint":
        mix = ", ".join(f"{d} x{n}" for d, n in report["dtypes"].items())
        lines = [
            f"{report['file']}: Kyutai checkpoint ({report['tensors']} tensors,"
            f" {report['parameters'] / 1e6:.2f} M parameters)",
            f"  dtypes: {mix}",
            f"  FlowLM: d_model {report['d_model']}, {report['flow_lm_layers']} layers",
            f"  fits configs: {', '.join(report['fits']) or 'none of the known ones'}",
        ]
        return lines
    lines = [f"{report['file']}: {report['description']}"]
    for v in report["voices"]:
        label = f"  voice {v['name']!r}: " if v["name"] else "  "
        if v["kind"] == "state":
            shape = (
                f"{v['positions']} positions, {v['layers']} layers x {v['kv_heads']} KV heads"
                f" x {v['head_dim']}"
                if v.get("layers") is not None
                else "KV-cache state"
            )
        elif "frames_by_width" in v:
            options = ", ".join(f"{f} frames of width {w}" for w, f in v["frames_by_width"].items())
            shape = f"raw float32: {options or 'no known width'}"
        else:
            shape = f"{v['frames']} frames, width {v['width']}"
        fits = v["fits"]
        where = "unknown until loaded" if fits is None else ", ".join(fits) or "no known model"
        lines.append(f"{label}{shape}, {v['dtype']}; fits by shape: {where}")
    if report["ignored_tensors"]:
        lines.append(f"  ignored tensors: {', '.join(report['ignored_tensors'])}")
    return lines


def inspect_command(
    file: Path = typer.Argument(
        ..., metavar="PATH", help="A voice file, a checkpoint, a model folder or a recording."
    ),
    as_json: bool = typer.Option(False, "--json", help="JSON on stdout instead of text."),
    model_dir: Path | None = typer.Option(
        None,
        "--model-dir",
        metavar="DIR",
        help="The model a voice file is for (a pack, bundle or browser pack): a raw .bin"
        " voice of a model pockettts does not list is read with its width.",
    ),
) -> None:
    report = describe(file, model_dir)
    if as_json:
        typer.echo(json.dumps(report, indent=2))
        return
    for line in _text(report):
        typer.echo(line)
