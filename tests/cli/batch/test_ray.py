"""--ray on a real local Ray instance (2 CPUs): the same files as one process, and an actor
killed mid-run costs only its lines in flight (made again, none lost, none twice)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess

import pytest

from tests.cli.batch.test_run import _long_lines, _start, _wait_for_records, batch, records, wavs
from tests.support.cli import run
from tests.support.rayhelp import local_cluster

pytest.importorskip("ray")

pytestmark = pytest.mark.slow


def test_ray_makes_the_same_files_as_one_process(pack_dir, tmp_path) -> None:
    lines = tmp_path / "lines.txt"
    lines.write_bytes(b"a|First.\nSecond, plain.\nbad/id|Nope.\nc|Third one.\n")
    one = batch(pack_dir, lines, tmp_path / "one", "--seed", "4", "-q")
    on_ray = batch(pack_dir, lines, tmp_path / "ray", "--seed", "4", "--ray", "--jobs", "2")
    assert one.returncode == on_ray.returncode == 1, on_ray.stderr
    assert b"3 written, 0 already done, 1 failed" in on_ray.stderr
    assert b"line 3" in on_ray.stderr and b"Traceback" not in on_ray.stderr
    assert wavs(tmp_path / "one") == wavs(tmp_path / "ray") and len(wavs(tmp_path / "ray")) == 3
    seeds = {r["id"]: r["seed"] for r in records(tmp_path / "one")}
    assert {r["id"]: r["seed"] for r in records(tmp_path / "ray")} == seeds
    again = batch(pack_dir, lines, tmp_path / "ray", "--seed", "4", "--ray")
    assert b"0 written, 3 already done, 1 failed" in again.stderr  # resumes like the rest


def test_a_relative_model_dir_reaches_a_clusters_workers(pack_dir, tmp_path) -> None:
    # --ray ADDRESS: the workers run in the cluster's folder (here the test's), not in the
    # command's, where "pack" is; a local --ray's workers share the command's.
    shutil.copytree(pack_dir, tmp_path / "pack")
    lines = tmp_path / "lines.txt"
    lines.write_bytes(b"a|First.\nb|Second one.\n")
    one = batch(pack_dir, lines, tmp_path / "one", "--seed", "4", "-q")
    assert one.returncode == 0, one.stderr
    with local_cluster(2) as address:
        r = run(
            "tts", "--input-file", "lines.txt", "--output-dir", "ray", "--model-dir", "pack",
            "--seed", "4", "--ray", address, "-q", cwd=tmp_path, timeout=400,
        )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert wavs(tmp_path / "ray") == wavs(tmp_path / "one") and len(wavs(tmp_path / "one")) == 2


def test_a_killed_ray_actor_costs_only_its_lines_in_flight(pack_dir, tmp_path) -> None:
    lines, out = _long_lines(tmp_path, 32), tmp_path / "out"
    proc = _start(pack_dir, lines, out, "--ray", "--jobs", "2")
    done = _wait_for_records(out, 4, proc, limit=150)
    victim = done[-1]["worker"]
    os.kill(int(victim.split("@")[0]), signal.SIGKILL)
    _, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, err
    notes = [line for line in err.splitlines() if b"will be made again" in line]
    assert notes and all(victim.encode() in line for line in notes)
    # at most the groups it held (2 calls x 4 lines) were in flight
    assert sum(int(line.split(b"; ")[1].split()[0]) for line in notes) <= 8
    recs = records(out)
    assert sorted(r["id"] for r in recs) == sorted(f"s{i:03d}" for i in range(32))
    assert all(r["status"] == "done" for r in recs)
    workers = {r["worker"] for r in recs}
    assert victim in workers and len(workers) >= 2
    fresh = tmp_path / "fresh"
    assert batch(pack_dir, lines, fresh, "--seed", "3", "-q").returncode == 0
    assert wavs(fresh) == wavs(out)


def test_an_unreachable_cluster_is_one_line_and_exit_1_at_once(pack_dir, tmp_path) -> None:
    with socket.socket() as sock:  # a port nobody listens on once it is closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    lines = tmp_path / "lines.txt"
    lines.write_bytes(b"a|First.\n")
    address = f"127.0.0.1:{port}"
    try:  # Ray alone retries for about fourteen minutes
        r = run(
            "tts", "--input-file", lines, "--output-dir", tmp_path / "out",
            "--model-dir", pack_dir, "--ray", address, timeout=60,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail(f"--ray {address} still waiting after 60 s")
    said = r.stderr.decode().strip().splitlines()
    assert r.returncode == 1, r.stderr
    assert len(said) == 1 and said[0].startswith("pockettts: error: "), said
    assert address in said[0] and "Traceback" not in said[0], said
