"""Values a careless or hostile user types: each refused with words that say what is
wrong, before any model work. Real console-script subprocesses on the tiny pack."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.test_cli_tts import SCRIPT


def run(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "POCKETTTS_DEBUG"}
    return subprocess.run(
        [SCRIPT, *map(str, args)], capture_output=True, env=env, cwd=cwd, timeout=120
    )


@pytest.mark.parametrize("value", ["nan", "-nan", "NaN"])
def test_a_nan_temperature_says_it_is_not_a_number_in_range(pack_dir, tmp_path, value):
    r = run("tts", "Hi.", "-o", tmp_path / "x.wav", "--temperature", value, "--model-dir", pack_dir)
    assert r.returncode == 2, r.stderr
    assert b"is not a number: give one from 0 to 10" in r.stderr, r.stderr
    assert b"less than or equal" not in r.stderr
