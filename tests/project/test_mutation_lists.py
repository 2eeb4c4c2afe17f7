"""Every mistake of scripts/mutations/*.txt still applies to the tree (``--check``): an
entry whose line changed is found when the change is made, not at the next mutation run."""

from __future__ import annotations

import subprocess
import sys

from tests.support import paths

ROOT = paths.ROOT


def test_every_listed_mistake_still_applies() -> None:
    r = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "mutate.py"), "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.rstrip().endswith(": 0 stale"), r.stdout
