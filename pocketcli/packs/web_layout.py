"""The browser pack's file layout and how to recognise one, without the graph builder.

Every ``--model-dir`` is offered to the browser runtime (``runtimes.web_spec``) and an
``inspect`` of a folder looks for this layout too: both need only these names, so they
must not import ``packs.web``, whose ``onnx`` import (and its ``ml_dtypes``) costs about
a second of CPU at every start of the CLI.
"""

from __future__ import annotations

import json
from pathlib import Path

from pocketcli.atomic import FolderKind

FORMAT = "pocket-tts-onnx-web"
CONFIG_FILE = "pocket_tts.json"
GRAPH_DIR = "onnx"
TEXT_EMBED = f"{GRAPH_DIR}/text_embed.onnx"
FLOW_LM = f"{GRAPH_DIR}/flow_lm.onnx"
MIMI_DECODER = f"{GRAPH_DIR}/mimi_decoder.onnx"
VOICE_FILE = "voice_alba.bin"
BOS_FILE = "bos_emb.bin"
TOKENIZER_FILE = "tokenizer.json"
FILES = (TEXT_EMBED, FLOW_LM, MIMI_DECODER, VOICE_FILE, BOS_FILE, TOKENIZER_FILE, CONFIG_FILE)


def is_web_pack(directory: str | Path) -> bool:
    """True when a folder is in the browser pack layout (its three graphs and config)."""
    d = Path(directory)
    return all((d / f).is_file() for f in (CONFIG_FILE, FLOW_LM, MIMI_DECODER, TEXT_EMBED))


def _is_our_web_pack(folder: Path) -> bool:
    """A browser pack pockettts exported: its pocket_tts.json carries the model config."""
    try:
        meta = json.loads((folder / CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(meta, dict) and meta.get("format") == FORMAT and "config" in meta


# A folder the web exporter wrote: only the layout's files (either tokenizer).
WEB_FOLDER = FolderKind(
    "browser pack", _is_our_web_pack, lambda _folder: (*FILES, GRAPH_DIR, "tokenizer.model")
)
