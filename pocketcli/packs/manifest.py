"""The pack manifest (``pack.json``): what a built ONNX pack holds.

A pack is a directory: ONNX graphs per precision, the tokenizer, constants
and this manifest, which keeps the model config so a pack is self-describing.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pocketcli.config import ConfigError, ModelConfig
from pocketcli.errors import PackError as PackError  # defined there; re-exported
from pocketcli.filekind import not_found
from pocketcli.packs.state_spec import StateSpec

MANIFEST_NAME = "pack.json"
FORMAT = "pockettts-onnx-pack"
# 2: time-major Mimi decoder states, opset 20 graphs (a version-1 pack in the store is rebuilt).
FORMAT_VERSION = 2
GRAPH_NAMES = ("text_embedding", "flowlm_step", "flow_head", "mimi_decoder")
# Present only in packs whose checkpoint has voice-cloning weights (voice_cloning: true).
ENCODER_GRAPH = "mimi_encoder"
# The scheduler's graphs (many streams, one frame each per call); optional: a pack built
# before them is served one row at a time.
BATCH_GRAPHS = ("flowlm_step_batch", "flow_head_batch")
# Mimi for many streams per call (states stacked along the batch); fp32 packs only, also
# optional: without it each stream is decoded on its own (int8 and int4 packs always are).
MIMI_BATCH_GRAPH = "mimi_decoder_batch"
PRECISIONS = ("fp32", "int8", "int4")


STAMP_NAME = ".pockettts-verified.json"  # sizes and times of files already checked


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _content_digest(d: dict[str, Any]) -> str:
    """sha256 of a manifest's content (its own entry in ``files`` left out), independent
    of how the JSON is laid out."""
    files = d.get("files")
    files = (
        {k: v for k, v in files.items() if k != MANIFEST_NAME} if isinstance(files, dict) else files
    )
    text = json.dumps({**d, "files": files}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def seal(d: dict[str, Any]) -> dict[str, Any]:
    """``d`` with ``files["pack.json"]``: the sha256 of the rest of the manifest, so that
    pack.json is covered by the pack's checksums like every other file."""
    files = {k: v for k, v in d.get("files", {}).items() if k != MANIFEST_NAME}
    body = {**d, "files": files}
    return {**d, "files": {**files, MANIFEST_NAME: _content_digest(body)}}


def _check_sealed(path: Path, d: dict[str, Any]) -> None:
    """A manifest whose recorded sha256 of itself does not match was edited or damaged.
    (Packs built before pack.json was covered record none: their numbers are still
    bounded, see ``config_bounds``.)"""
    files = d.get("files")
    recorded = files.get(MANIFEST_NAME) if isinstance(files, dict) else None
    if recorded is not None and recorded != _content_digest(d):
        raise PackError(
            f"pack {path.parent} is damaged: {MANIFEST_NAME} does not match the sha256 it"
            " records of itself (edited?); rebuild or download the pack again"
        )


def _checksums(value: Any) -> dict[str, str]:
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and len(v) == 64 for k, v in value.items()
    ):
        raise ValueError("files must map file names to sha256 hex digests")
    for name in value:
        if Path(name).is_absolute() or ".." in Path(name).parts:
            raise ValueError(f"pack file name {name!r} points outside the pack")
    return dict(value)


def read_json_file(
    path: Path, error: type[PackError] = PackError, missing: str | None = None
) -> Any:
    """A folder's JSON description, or one line (``error`` is the layout's own class):
    ``missing`` when there is no file and that message is given, else the file and the
    cause (the reader's first line)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except RecursionError:
        raise error(f"cannot read {path}: it is nested too deeply") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        if missing is not None and isinstance(exc, FileNotFoundError):
            raise error(missing) from None
        cause = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise error(f"cannot read {path}: {cause}") from None


@dataclass(frozen=True)
class PackManifest:
    config: ModelConfig
    graphs: dict[str, dict[str, str]]  # precision -> graph name -> file
    mimi_states: tuple[StateSpec, ...]
    tokenizer_file: str
    tokenizer_kind: str
    constants_file: str
    voice_cloning: bool = False
    voice_cloning_note: str = ""  # why not, when voice_cloning is false
    source: dict[str, Any] = field(default_factory=dict)
    # sha256 of every file of the pack (graphs, their data, tokenizer, constants);
    # empty for packs built before checksums were recorded (not checked then).
    files: dict[str, str] = field(default_factory=dict)

    @property
    def precisions(self) -> tuple[str, ...]:
        return tuple(p for p in PRECISIONS if p in self.graphs)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "config": self.config.to_dict(),
            "graphs": self.graphs,
            "mimi_states": [s.to_dict() for s in self.mimi_states],
            "tokenizer": {"file": self.tokenizer_file, "kind": self.tokenizer_kind},
            "constants": self.constants_file,
            "voice_cloning": self.voice_cloning,
            "voice_cloning_note": self.voice_cloning_note,
            "source": self.source,
            "files": self.files,
        }

    def write(self, directory: Path) -> None:
        """Writes ``pack.json``, recording the sha256 of every file now in ``directory``."""
        files = {
            p.name: _sha256(p)
            for p in sorted(directory.iterdir())
            if p.is_file() and p.name not in (MANIFEST_NAME, STAMP_NAME)
        }
        manifest = replace(self, files=files)
        text = json.dumps(seal(manifest.to_dict()), indent=2, sort_keys=True)
        (directory / MANIFEST_NAME).write_text(text + "\n", encoding="utf-8")

    @classmethod
    def read(cls, directory: str | Path) -> PackManifest:
        directory = Path(directory)
        path = directory / MANIFEST_NAME
        if not directory.is_dir():
            if directory.exists():
                raise PackError(f"model pack {directory} is a file, not a folder")
            raise PackError(not_found(directory, "model pack"))
        if not path.is_file():
            raise PackError(f"{directory} is not a pockettts model pack (no {MANIFEST_NAME})")
        d = read_json_file(path)
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise PackError(f"{path} is not a pockettts pack manifest")
        if d.get("version") != FORMAT_VERSION:
            raise PackError(
                f"{path} has pack format version {d.get('version')}; this pockettts reads "
                f"version {FORMAT_VERSION}: rebuild the pack"
            )
        _check_sealed(path, d)  # before any number of it is read
        try:
            manifest = cls(
                config=ModelConfig.from_dict(d["config"]),
                graphs={p: dict(g) for p, g in d["graphs"].items()},
                mimi_states=tuple(StateSpec.from_dict(s) for s in d["mimi_states"]),
                tokenizer_file=d["tokenizer"]["file"],
                tokenizer_kind=d["tokenizer"]["kind"],
                constants_file=d["constants"],
                voice_cloning=bool(d.get("voice_cloning", False)),
                voice_cloning_note=str(d.get("voice_cloning_note", "")),
                source=dict(d.get("source", {})),
                files=_checksums(d.get("files", {})),
            )
        except KeyError as exc:
            raise PackError(f"{path} is incomplete: no {exc} entry") from exc
        except ConfigError as exc:
            raise PackError(f"{path}: {exc}") from None
        except (TypeError, AttributeError, ValueError) as exc:
            raise PackError(f"{path} is incomplete: {exc}") from exc
        manifest.check_files(directory)
        manifest.verify(directory)
        return manifest

    def verify(self, directory: Path) -> None:
        """Checks each file against its recorded sha256; a file whose size and
        modification time match a previous check (``STAMP_NAME``) is not hashed again."""
        if not self.files:
            return
        stamp_path = directory / STAMP_NAME
        try:
            stamps = json.loads(stamp_path.read_text(encoding="utf-8"))
            stamps = stamps if isinstance(stamps, dict) else {}
        except (OSError, ValueError, RecursionError):
            stamps = {}
        fresh: dict[str, list] = {}
        for name, digest in self.files.items():
            if name == MANIFEST_NAME:  # checked when read (_check_sealed)
                continue
            file = directory / name
            try:
                st = file.stat()
            except OSError as exc:
                raise PackError(f"pack {directory} is incomplete: {name}: {exc.strerror}") from None
            key = [st.st_size, st.st_mtime_ns, digest]
            if stamps.get(name) != key and _sha256(file) != digest:
                raise PackError(
                    f"pack {directory} is damaged: {name} does not match the sha256 "
                    "recorded in pack.json; rebuild or download the pack again"
                )
            fresh[name] = key
        if fresh != stamps:
            try:  # a read-only pack is simply checked again next time
                tmp = stamp_path.with_name(f".{STAMP_NAME}.{os.getpid()}")
                tmp.write_text(json.dumps(fresh), encoding="utf-8")
                os.replace(tmp, stamp_path)
            except OSError:
                pass

    def check_files(self, directory: Path) -> None:
        names = [self.tokenizer_file, self.constants_file]
        for precision, graphs in self.graphs.items():
            required = GRAPH_NAMES + ((ENCODER_GRAPH,) if self.voice_cloning else ())
            missing_graphs = [g for g in required if g not in graphs]
            if missing_graphs:
                raise PackError(f"{precision} graphs missing from manifest: {missing_graphs}")
            names += list(graphs.values())
        for name in names:
            if not isinstance(name, str):
                raise PackError(f"pack file name {name!r} in {MANIFEST_NAME} is not a string")
            if Path(name).is_absolute() or ".." in Path(name).parts:
                raise PackError(f"pack file name {name!r} points outside the pack")
            if not (directory / name).is_file():
                raise PackError(f"pack {directory} is incomplete: {name} is missing")
