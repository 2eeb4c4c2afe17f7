"""--jobs workers that die, as the test makes them: a replacement killed while it loads
costs nothing while another worker is healthy, and a line that kills every worker making
it is failed after exactly three deaths (the lines queued behind it are not blamed).

The test sees what the batch does from outside: worker processes are the driver's
children started by multiprocessing, and a worker making line N has its hidden
``.lineN.wav.PID.part`` file open in the output folder."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli.batch.test_run import (
    _every_line_done,
    _long_lines,
    _start,
    _wait_for_records,
    records,
)

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="finds the workers in /proc (Linux)"
)

TEXT = "This sentence is long enough to take the tiny model a little while, really."
PART = re.compile(r"^\.+line(\d+)\.wav\.(\d+)\.part")


def _workers(driver: int) -> set[int]:
    """The driver's multiprocessing children (not its resource tracker)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (entry / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
        if ppid == driver and b"--multiprocessing-fork" in cmdline:
            found.add(int(entry.name))
    return found


def _until(what: str, check, proc: subprocess.Popen, limit: float = 120.0):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if (value := check()) is not None:
            return value
        assert proc.poll() is None, (what, proc.communicate()[1])
        time.sleep(0.005)
    raise AssertionError(f"no {what} within {limit:.0f} s")


def test_a_replacement_killed_while_it_loads_costs_nothing(pack_dir, tmp_path) -> None:
    lines, out = _long_lines(tmp_path, 16), tmp_path / "out"
    proc = _start(pack_dir, lines, out, "--jobs", "2")
    first = _wait_for_records(out, 1, proc)[0]
    victim = int(first["worker"].split("@")[0])
    before = _until("two workers", lambda: w if len(w := _workers(proc.pid)) == 2 else None, proc)
    os.kill(victim, signal.SIGKILL)
    # the replacement, killed at once: it is still importing, far from loaded
    new = _until("replacement", lambda: next(iter(_workers(proc.pid) - before), None), proc)
    os.kill(new, signal.SIGKILL)
    err, recs = _every_line_done(proc, out, 16)
    assert b"died while loading the model (killed by SIGKILL" in err and b"starting another" in err
    assert f"{new}@" not in " ".join(r["worker"] for r in recs)  # it never made a line


def test_a_line_that_kills_its_workers_fails_after_three(pack_dir, tmp_path) -> None:
    lines, out = tmp_path / "lines.txt", tmp_path / "out"
    deadly = 3  # long enough that the test always sees its part file before it ends
    rows = [f"s{i:03d}|{TEXT * (40 if i + 1 == deadly else 1)} Number {i}.\n" for i in range(8)]
    lines.write_text("".join(rows))
    proc = _start(pack_dir, lines, out, "--jobs", "2")
    killed: list[int] = []
    deadline = time.monotonic() + 300
    while proc.poll() is None and time.monotonic() < deadline:
        for part in out.glob(f".*line{deadly}.wav.*"):
            match = PART.match(part.name)
            if match and int(match[2]) not in killed:
                killed.append(int(match[2]))
                os.kill(killed[-1], signal.SIGKILL)
        time.sleep(0.005)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err
    assert len(killed) == 3, (killed, err)  # three workers, not two, not four
    by_id = {r["id"]: r for r in records(out)}
    assert by_id["s002"]["status"] == "failed"
    assert "died 3 times (killed by SIGKILL" in by_id["s002"]["error"]
    # the lines queued behind it on those workers never ran there: all made
    assert [i for i, r in sorted(by_id.items()) if r["status"] != "done"] == ["s002"]
    assert b"7 written, 0 already done, 1 failed" in err and b"Traceback" not in err


def test_a_line_for_a_worker_that_just_died_goes_back_to_the_queue() -> None:
    # The race behind a silent exit 1: a worker dies after its last result and before
    # the driver tops it up; sending then raises EPIPE, which click turned into exit 1
    # with nothing on stderr. Here the worker's end of a real pipe is already closed.
    import multiprocessing

    from pocketcli.batch.plan import Job
    from pocketcli.batch.processes import ProcessExecutor, _Slot
    from pocketcli.batch.queue import JobQueue

    ours, theirs = multiprocessing.get_context("spawn").Pipe(duplex=True)
    theirs.close()
    jobs = [Job(line=i, name=f"j{i}", text="t", seed=i, key="k") for i in (1, 2, 3)]
    queue = JobQueue(iter(jobs))
    executor = ProcessExecutor(None, None, None, 1, print)  # type: ignore[arg-type]
    slot = _Slot(multiprocessing.get_context("spawn").Process(), ours, "w", ready=True)
    executor._feed(slot, queue)  # must not raise
    assert slot.broken and not slot.held
    assert [j.name for j in queue.take(3)] == ["j1", "j2", "j3"]  # first again, none lost
    ours.close()
