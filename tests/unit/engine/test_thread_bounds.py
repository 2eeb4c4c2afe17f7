"""Every thread setting is bounded by the cores this process may use."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from pocketcli.cores import available_cores

PROBE = """
import json, sys
from pocketcli.api import PocketTTS
from pocketcli.batch.jobs import threads_for
from pocketcli.runtimes.onnx import default_threads

def threads_now():
    with open("/proc/self/status") as f:
        return int(next(l for l in f if l.startswith("Threads:")).split()[1])

before = threads_now()
kwargs = {} if sys.argv[2] == "env" else {"threads": int(sys.argv[2])}
tts = PocketTTS.open(model_dir=sys.argv[1], **kwargs)
print(json.dumps({"default": default_threads(), "runtime": tts.runtime.threads,
                  "batch": threads_for(1), "added": threads_now() - before}))
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="counts threads in /proc")
@pytest.mark.parametrize("env, arg", [("200", "env"), ("", "200")])
def test_threads_above_the_cores_are_lowered_to_the_cores(pack_dir, env, arg) -> None:
    environ = {**os.environ, "POCKETTTS_THREADS": env}
    r = subprocess.run(
        [sys.executable, "-c", PROBE, str(pack_dir), arg],
        capture_output=True,
        env=environ,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    cores = available_cores()
    assert got["runtime"] == cores
    if env:
        assert got["default"] == cores and got["batch"] == cores
    # Two sessions (FlowLM step, Mimi) of `cores` threads each, plus a few of ORT's own.
    assert got["added"] <= 2 * cores + 8, got


def test_a_thread_setting_that_is_no_count_is_ignored(monkeypatch) -> None:
    from pocketcli.cores import threads_override

    for raw in ("0", "-3", "two", "", "1e9"):
        monkeypatch.setenv("POCKETTTS_THREADS", raw)
        assert threads_override() is None
    monkeypatch.setenv("POCKETTTS_THREADS", "9" * 40)
    assert threads_override() == available_cores()
