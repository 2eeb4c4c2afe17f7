"""Waiting on what a CLI subprocess does, with a generous deadline (never a guessed sleep)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

DEADLINE = 60.0  # a loaded machine is slow, never a reason to fail


def wait_until_writing(proc: subprocess.Popen, folder: Path, deadline: float = DEADLINE) -> None:
    """Until a temporary output file (``*.part``) exists in ``folder``: the model is loaded
    and the run is speaking into it. Fails if the process ends first."""
    end = time.monotonic() + deadline
    while not any(p.name.endswith(".part") for p in Path(folder).iterdir()):
        if proc.poll() is not None:
            _, err = proc.communicate()
            raise AssertionError(f"ended ({proc.returncode}) before writing: {err!r}")
        if time.monotonic() > end:
            raise AssertionError(f"no output file begun in {folder} within {deadline:g} s")
        time.sleep(0.01)
