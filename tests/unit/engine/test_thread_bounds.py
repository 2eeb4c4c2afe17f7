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


def _probe(script: str, pack_dir, arg: str, env: str) -> dict:
    """``script``'s JSON line, run with ``pack_dir``, ``arg`` and POCKETTTS_THREADS=``env``."""
    environ = {**os.environ, "POCKETTTS_THREADS": env}
    r = subprocess.run(
        [sys.executable, "-c", script, str(pack_dir), arg],
        capture_output=True,
        env=environ,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="counts threads in /proc")
@pytest.mark.parametrize("env, arg", [("200", "env"), ("", "200")])
def test_threads_above_the_cores_are_lowered_to_the_cores(pack_dir, env, arg) -> None:
    got = _probe(PROBE, pack_dir, arg, env)
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


SESSIONS_PROBE = """
import json, sys
from pocketcli.api import PocketTTS
from pocketcli.options import SpeakOptions

kwargs = {} if sys.argv[2] == "env" else {"threads": int(sys.argv[2])}
tts = PocketTTS.open(model_dir=sys.argv[1], **kwargs)
tts.synthesize("Hello there.", options=SpeakOptions(seed=1))  # every graph of a turn is loaded
runtime = tts.runtime
print(json.dumps({graph: session.get_session_options().intra_op_num_threads
                  for graph, session in runtime._sessions.items()}))
"""


@pytest.mark.skipif(available_cores() < 2, reason="needs two cores to tell one thread from two")
@pytest.mark.parametrize(("env", "arg", "mimi"), [("", "env", 1), ("2", "env", 2), ("", "2", 2)])
def test_the_mimi_decoder_runs_on_one_thread_unless_a_count_is_chosen(
    pack_dir, env, arg, mimi
) -> None:
    """The engine overlaps Mimi with the FlowLM on its own thread: by default the decoder's
    session has one intra-op thread (a second one costs processor time and gains nothing)
    and the FlowLM two; a count the user chose applies to both."""
    threads = _probe(SESSIONS_PROBE, pack_dir, arg, env)
    decoders = [g for g in threads if g.startswith("mimi_decoder")]
    steps = [g for g in threads if g.startswith("flowlm_step")]
    assert decoders and steps, threads
    assert {threads[g] for g in decoders} == {mimi}
    assert {threads[g] for g in steps} == {2}
