"""pockettts corpus against a local stand-in Hub: fetch, strip ids, then benchmark on it."""

from __future__ import annotations

import json
from pathlib import Path

from pocketcli.bench.corpus import MINIMAX_REPO, MINIMAX_REVISION
from tests.support.cli import run
from tests.support.fakehub import FakeHub, running, subprocess_env


def test_fetch_french_then_benchmark_with_it(tmp_path, pack_dir) -> None:
    hub = FakeHub()
    hub.add(
        MINIMAX_REPO, "text/french.txt", "a.wav|Bonjour à tous.\n\nb.wav|Merci | bien.\n".encode()
    )
    with running(hub):
        env = subprocess_env(hub, tmp_path)
        r = run("corpus", "--languages", "french", env=env)
        assert r.returncode == 0, r.stderr
        assert any(MINIMAX_REVISION in x.path for x in hub.requests("french.txt"))
        written = r.stdout.decode().strip()
        lines = [
            x
            for x in Path(written).read_text(encoding="utf-8").splitlines()
            if not x.startswith("#")
        ]
        assert lines == ["Bonjour à tous.", "Merci | bien."]
        hub.clear_log()
        again = run("corpus", "--languages", "french", "--offline", env=env)
        assert again.returncode == 0 and hub.requests() == []
        out = tmp_path / "b.json"
        bench = run(
            "benchmark",
            "--corpus",
            "minimax-french",
            "--model-dir",
            str(pack_dir),
            "--skip-asr",
            "-q",
            "--output-json",
            str(out),
            env=env,
        )
        assert bench.returncode == 0, bench.stderr
        assert [p["text"] for p in json.loads(out.read_text())["phrases"]] == lines
        missing = run("corpus", "--languages", "german", "--offline", env=env)
        assert missing.returncode == 1 and b"--offline" in missing.stderr
