"""``--jobs N`` worker processes on this machine are bounded: at most the cores this
process may use (a worker runs one thread at least; more only wait for each other,
each holding its own copy of the model) and what free memory holds. A larger N is
lowered, with a note saying to what and why; it used to start up to 4096 workers."""

from __future__ import annotations

import pytest

from pocketcli.batch import jobs
from pocketcli.cli.batch_command import _split


def test_a_count_above_the_cores_is_lowered_with_a_note(capsys) -> None:
    assert _split(4096, None, "int8", lines=10, cores=2, quiet=False) == (2, 1)
    assert capsys.readouterr().err == (
        "pockettts: note: --jobs 4096 lowered to 2: 2 cores this process may use\n"
    )
    assert _split(2, None, "int8", lines=10, cores=2, quiet=False) == (2, 1)
    assert capsys.readouterr().err == ""  # within the bound: as asked, no note
    assert _split(64, None, "int8", lines=10, cores=1, quiet=True) == (1, 1)
    assert capsys.readouterr().err == ""  # -q: no note


def test_free_memory_bounds_the_workers_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jobs, "available_memory_mb", lambda: 700)  # two int8 workers
    assert jobs.bound_workers(8, "int8", cores=16) == (
        2,
        "2 workers of about 300 MB in free memory",
    )
    assert jobs.bound_workers(8, "int8", cores=4)[0] == 2
    monkeypatch.setattr(jobs, "available_memory_mb", lambda: None)  # unknown: cores only
    assert jobs.bound_workers(8, "int8", cores=4) == (4, "4 cores this process may use")


def test_a_ray_cluster_keeps_the_count_it_was_given() -> None:
    assert _split(64, "auto", "int8", lines=100, cores=2, quiet=False)[0] == 64
