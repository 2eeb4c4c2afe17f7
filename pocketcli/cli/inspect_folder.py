"""``pockettts inspect DIR``: which model layout a folder holds and what it can do."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _size(paths: list[Path]) -> int:
    return sum(p.stat().st_size for p in paths if p.is_file())


def describe_bundle(directory: Path) -> dict[str, Any]:
    from pocketcli.packs.kevinahm.metadata import GRAPHS, graph_file
    from pocketcli.runtimes.kevinahm import Bundle

    bundle = Bundle.read(directory)
    caches = [e for e in bundle.flow_states if e.key == "cache"]
    extra = [directory / "bundle.json", bundle.tokenizer]
    if bundle.bos_file is not None:
        extra.append(bundle.bos_file)
    sizes = {}
    for precision in bundle.precisions:
        files = [bundle.graph(g, precision) for g in GRAPHS]
        sizes[precision] = _size([f for f in files if f is not None] + extra)
    config = bundle.config()
    return {
        "file": str(directory),
        "kind": "folder",
        "layout": "kevinahm-v2",
        "description": "KevinAHM v2 ONNX bundle (bundle.json, schema 2)",
        "name": bundle.name,
        "languages": [bundle.language],
        "precisions": list(bundle.precisions),
        "voice_cloning": bundle.can_clone,
        "flow_lm_layers": len(caches),
        "cache_positions": caches[0].shape[2] if caches else None,
        "remove_semicolons": bool(config.text.get("remove_semicolons", False)),
        "model_recommended_frames_after_eos": config.text.get("model_recommended_frames_after_eos"),
        "graphs": sorted(
            graph_file(g, p)
            for g in GRAPHS
            for p in ("fp32", "int8")
            if (directory / graph_file(g, p)).is_file()
        ),
        "bytes_by_precision": sizes,
    }


def describe_pack(directory: Path) -> dict[str, Any]:
    from pocketcli.packs.graph_files import side_file
    from pocketcli.packs.manifest import PackManifest

    manifest = PackManifest.read(directory)
    language = manifest.source.get("language")
    fixed = [directory / manifest.tokenizer_file, directory / manifest.constants_file]
    sizes = {
        p: _size(
            fixed
            + [directory / f for f in graphs.values()]
            + [side_file(directory / f) for f in graphs.values()]
        )
        for p, graphs in manifest.graphs.items()
    }
    return {
        "file": str(directory),
        "kind": "folder",
        "layout": "pockettts-onnx-pack",
        "description": "pockettts ONNX pack (pack.json)",
        "name": directory.name,
        "languages": [language] if language else [],
        "precisions": list(manifest.precisions),
        "voice_cloning": manifest.voice_cloning,
        "flow_lm_layers": manifest.config.flow_lm.transformer.num_layers,
        "bytes_by_precision": sizes,
    }


def describe_web_pack(directory: Path) -> dict[str, Any]:
    from pocketcli.packs.web_layout import FILES
    from pocketcli.runtimes.web import read_pack_config

    meta = read_pack_config(directory)
    tokenizer = meta.get("tokenizer_file", "tokenizer.json")
    files = [directory / f for f in FILES if f != "tokenizer.json"] + [directory / str(tokenizer)]
    language = (
        meta.get("source", {}).get("language") if isinstance(meta.get("source"), dict) else None
    )
    return {
        "file": str(directory),
        "kind": "folder",
        "layout": "web",
        "description": "browser pack (Pocket-TTS-ONNX-WebGPU: pocket_tts.json, onnx/)",
        "name": directory.name,
        "languages": [language] if language else [],
        "precisions": ["int4"],
        "precision_note": "flow LM 4-bit MatMulNBits, text table 4-bit, Mimi int8",
        "voice_cloning": False,
        "voices": sorted(meta.get("voices", {})),
        "flow_lm_layers": meta.get("num_layers"),
        "decode_steps": meta.get("decode_steps"),
        "bytes_by_precision": {"int4": _size(files)},
    }


def describe_folder(directory: Path) -> dict[str, Any]:
    from pocketcli.cli.checks import PathError
    from pocketcli.packs.web_layout import CONFIG_FILE

    if (directory / "bundle.json").is_file():
        return describe_bundle(directory)
    if (directory / CONFIG_FILE).is_file():
        return describe_web_pack(directory)
    if (directory / "pack.json").is_file():
        return describe_pack(directory)
    raise PathError(
        f"{directory} is a folder that holds no model: no bundle.json (KevinAHM v2 bundle),"
        " no pocket_tts.json (browser pack) and no pack.json (pockettts pack)"
    )


def folder_text(report: dict[str, Any]) -> list[str]:
    languages = ", ".join(report["languages"]) or "not recorded (custom config)"
    sizes = ", ".join(f"{p} {n / 1e6:.1f} MB" for p, n in report["bytes_by_precision"].items())
    lines = [
        f"{report['file']}: {report['description']}",
        f"  layout: {report['layout']}; name {report['name']}",
        f"  languages: {languages}",
        f"  precisions: {', '.join(report['precisions']) or 'none'} (on disk: {sizes})",
        f"  FlowLM: {report['flow_lm_layers']} layers",
        "  voice cloning: "
        + ("yes (mimi_encoder)" if report["voice_cloning"] else "no (built-in voices and files)"),
    ]
    if report["layout"] == "web":
        lines[-1] = (
            f"  voice cloning: no (no Mimi encoder); voices: {', '.join(report['voices'])}"
            " and voice files"
        )
        lines.append(f"  quantisation: {report['precision_note']}")
    if report["layout"] == "kevinahm-v2":
        frames = report["model_recommended_frames_after_eos"]
        lines.append(
            f"  text: remove_semicolons {str(report['remove_semicolons']).lower()},"
            f" frames after EOS {frames if frames is not None else 'auto'}"
        )
    return lines
