"""``--streams auto`` (the default): several lines in flight where the runtime batches,
one where it cannot (a pack built before batching), as README says. Lines in flight
together finish in the order their lengths allow; one at a time, in the file's order:
the manifest (written as lines finish) shows which it was. Through the real CLI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from pocketcli.packs.manifest import seal
from tests.cli.batch.test_run import batch, records

LONG = "This first line is long, so that it goes on for a good while. " * 4
LINES = f"long|{LONG}\nshort|Hi.\n".encode()


def _pack_built_before_batching(pack_dir: Path, out: Path) -> Path:
    """The tiny pack as packs built before batching are: no batched graphs listed (and
    the manifest sealed again, as the builder of such a pack would have written it)."""
    shutil.copytree(pack_dir, out)
    data = json.loads((out / "pack.json").read_text(encoding="utf-8"))
    for graphs in data["graphs"].values():
        for name in [n for n in graphs if "batch" in n]:
            graphs.pop(name)
    (out / "pack.json").write_text(json.dumps(seal(data)), encoding="utf-8")
    return out


def _finished(out: Path) -> list[str]:
    return [r["id"] for r in records(out) if r["id"] is not None]


def test_streams_auto_is_one_line_at_a_time_without_batched_graphs(pack_dir, tmp_path) -> None:
    old = _pack_built_before_batching(pack_dir, tmp_path / "old")
    lines = tmp_path / "lines.txt"
    lines.write_bytes(LINES)
    auto = batch(old, lines, tmp_path / "auto", "--seed", "3")
    two = batch(old, lines, tmp_path / "two", "--seed", "3", "--streams", "2")
    batched = batch(pack_dir, lines, tmp_path / "batched", "--seed", "3")
    assert auto.returncode == two.returncode == batched.returncode == 0, auto.stderr
    assert _finished(tmp_path / "auto") == ["long", "short"]  # one at a time, in order
    assert _finished(tmp_path / "two") == ["short", "long"]  # together: the short one first
    assert _finished(tmp_path / "batched") == ["short", "long"]  # auto where it batches
