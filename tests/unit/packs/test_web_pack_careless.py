"""A browser pack whose parts do not fit together is refused at load with one line naming
the file and the problem (issue 24, must-be 6), never an ONNX Runtime error at the first
call, and never silent: a table shorter than the tokenizer would speak zeros."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import onnx
import pytest
from onnx import numpy_helper

from pocketcli.api import PocketTTS
from pocketcli.packs import web
from pocketcli.runtimes.web import WebPackError
from tests.support.cli import run
from tests.support.paths import TINY
from tests.support.webhelp import tiny_web_pack


def _copy(tmp_path: Path) -> Path:
    pack = tmp_path / "pack"
    shutil.copytree(tiny_web_pack(), pack)
    for p in pack.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return pack


def _drop_a_state(pack: Path) -> None:
    meta = json.loads((pack / web.CONFIG_FILE).read_text())
    meta["mimi_state"].pop()  # the graph still takes it
    (pack / web.CONFIG_FILE).write_text(json.dumps(meta))


def _another_graph_as_text_embed(pack: Path) -> None:
    shutil.copyfile(pack / web.MIMI_DECODER, pack / web.TEXT_EMBED)


def _short_table(pack: Path) -> None:
    """The text table of a model with 100 pieces (GatherBlockQuantized returns zeros past
    its rows, so nothing would fail at run time)."""
    model = onnx.load(str(pack / web.TEXT_EMBED))
    for init in model.graph.initializer:
        if init.name in ("embed.qweight", "embed.scales"):
            init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init)[:100], init.name))
    onnx.save(model, str(pack / web.TEXT_EMBED))


CASES: dict[str, tuple[Callable[[Path], None], str, str]] = {
    "state not in pocket_tts.json": (_drop_a_state, web.MIMI_DECODER, "mimi_state"),
    "text_embed is another graph": (_another_graph_as_text_embed, web.TEXT_EMBED, "token_ids"),
    "table shorter than the tokenizer": (_short_table, "tokenizer.json", "100 rows"),
}


@pytest.mark.parametrize("case", CASES)
def test_a_pack_that_does_not_fit_together_is_refused_at_load(tmp_path, case) -> None:
    spoil, file, words = CASES[case]
    pack = _copy(tmp_path)
    spoil(pack)
    with pytest.raises(WebPackError) as info:
        PocketTTS.open(runtime="onnx", model_dir=pack)
    message = str(info.value)
    assert len(message.splitlines()) == 1 and str(pack / file) in message and words in message


def test_the_command_line_says_it_in_one_line(tmp_path) -> None:
    pack = _copy(tmp_path)
    _drop_a_state(pack)
    wav = tmp_path / "a.wav"
    env = {**os.environ, "POCKETTTS_CACHE": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1"}
    r = run("tts", "Hello there.", "--model-dir", str(pack), "-o", str(wav), env=env)
    err = r.stderr.decode()
    assert r.returncode == 1, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert str(pack / web.MIMI_DECODER) in err and "mimi_state" in err, err
    assert not wav.exists()


def test_export_web_with_a_precision_is_a_usage_error(tmp_path) -> None:
    """The layout fixes the browser pack's precision: a --precision would be ignored."""
    out = tmp_path / "web"
    r = run("export", "--format", "web", out, "--precision", "fp32",
            "--voice-clip", TINY / "clone_prompt_24k.wav", cache=tmp_path / "cache")  # fmt: skip
    err = r.stderr.decode()
    assert r.returncode == 2, err
    assert "Traceback" not in err and "--precision fp32" in err and "fixed" in err, err
    assert not out.exists()
