"""`benchmarks/load_serve.py --compare-reference`: pockettts serve against pocket-tts serve.

Both servers are real child processes on 127.0.0.1 (the tiny pack and its pocket-tts
checkpoint), real HTTP clients post the form both share (`POST /tts`). The figures are not
checked (speed belongs in benchmarks); what is checked is that the comparison is fair: EOS
is off on both sides, so every request of both servers runs to its frame budget.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT

SCRIPT = str(ROOT / "benchmarks" / "load_serve.py")

pytest.importorskip("pocket_tts")


@pytest.mark.oracle
@pytest.mark.slow
def test_both_servers_run_every_request_to_the_frame_budget(tmp_path: Path) -> None:
    out = tmp_path / "compare.json"
    r = subprocess.run(
        [sys.executable, SCRIPT, "--compare-reference", "--clients", "2", "--requests", "1",
         "--json", str(out)],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["alive"] == {"pockettts": True, "pocket-tts": True}
    phases = {row["server"]: row for row in report["phases"]}
    assert set(phases) == {"pockettts", "pocket-tts"}, report
    for name, row in phases.items():
        assert row["clients"] == 2 and row["requests"] == 2 and row["errors"] == 0, row
        assert row["rss_peak_mb"] > 0, row
        # With EOS on, the tiny random model stops at frame 6 + a few (under 1.2 s of
        # audio); with EOS off the two texts run to their budgets, above 5 s each.
        assert row["audio_seconds_per_request"] > 5.0, (name, row)
        assert 0 < row["first_audio_p50_ms"] <= row["first_audio_p95_ms"], row
    # The same texts and budget rule on both sides: the lengths agree within a few frames.
    ours, theirs = (phases[n]["audio_seconds_per_request"] for n in ("pockettts", "pocket-tts"))
    assert abs(ours - theirs) <= 0.5, (ours, theirs)
