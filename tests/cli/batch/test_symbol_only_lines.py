"""A batch line of nothing but symbol runs ("@@@ ###") is refused as having nothing to say,
never spoken as glued symbol names (real console script, tiny pack)."""

from __future__ import annotations

import json

from tests.support.cli import run


def test_a_line_of_symbol_runs_is_refused_and_the_next_spoken(pack_dir, tmp_path) -> None:
    lines = tmp_path / "in.txt"
    lines.write_text("@@@ ###\nHello.\n", encoding="utf-8")
    out = tmp_path / "out"
    args = ["tts", "--input-file", lines, "--output-dir", out, "--model-dir", pack_dir, "-q"]
    r = run(*args)
    assert r.returncode == 1, r.stderr
    assert b"line 1: nothing to say" in r.stderr and b"Traceback" not in r.stderr
    rows = [json.loads(row) for row in (out / "manifest.jsonl").read_text().splitlines()]
    status = {row["line"]: row["status"] for row in rows}
    assert status == {1: "failed", 2: "done"}
    assert not (out / next(r["file"] for r in rows if r["line"] == 1)).exists()
