"""Batch runs through the real CLI: --jobs gives the same files as one process, a failed
line never stops the rest, "done" means recorded in the manifest, killed runs resume."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.cli import SCRIPT, cli_env, run

LINES = (
    b"a|The first line.\n"
    b"Second line, plain.\n"
    b"../up|Never outside.\n"
    b"c|Third, with an id.\n"
    b"\xff broken\n"
    b"d|Fourth and last.\n"
)


def batch(pack_dir, lines: Path, out: Path, *extra: str, stdin: bytes | None = None):
    return run(
        "tts",
        "--input-file",
        str(lines),
        "--output-dir",
        str(out),
        "--model-dir",
        str(pack_dir),
        *extra,
        stdin=stdin,
    )


def records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]


def wavs(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.glob("*.wav")) if p.is_file()}


def error_lines(stderr: bytes) -> list[bytes]:
    return sorted(line for line in stderr.splitlines() if line.startswith(b"pockettts: line"))


def test_batch_writes_one_file_per_line_and_skips_done(pack_dir, tmp_path) -> None:
    lines = tmp_path / "lines.txt"
    lines.write_bytes(
        b"First line.\n\n   \nintro|Second line, with an id.\n"
        b"../escape|Never outside.\n\xff\xfe broken\nThird line.\n"
    )
    out = tmp_path / "out"
    r = batch(pack_dir, lines, out, "--seed", "1")
    assert r.returncode == 1  # two bad lines
    names = sorted(p.name for p in out.iterdir())
    assert "intro.wav" in names and len(names) == 4 and "manifest.jsonl" in names
    assert all(n.endswith(".wav") for n in names if n != "manifest.jsonl")
    assert not list(tmp_path.rglob("escape*"))
    assert b"line 5" in r.stderr and b"line 6" in r.stderr
    assert b"3 written, 0 already done, 2 failed" in r.stderr
    before = {p.name: p.stat().st_mtime_ns for p in out.glob("*.wav")}
    again = batch(pack_dir, lines, out, "--seed", "1")
    assert b"0 written, 3 already done, 2 failed" in again.stderr
    assert {p.name: p.stat().st_mtime_ns for p in out.glob("*.wav")} == before
    # the two refused lines are recorded as failed again (as any failed line tried again)
    assert [r["line"] for r in records(out) if r["status"] == "failed"] == [5, 6, 5, 6]
    redo = batch(pack_dir, lines, out, "--overwrite", "-q")
    assert b"3 written" in redo.stderr


def test_batch_from_stdin_and_all_good_exits_zero(pack_dir, tmp_path) -> None:
    r = batch(pack_dir, Path("-"), tmp_path, "-q", stdin=b"a|One.\nb|Two.\n")
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.wav", "b.wav", "manifest.jsonl"]


def test_jobs_make_the_same_files_errors_and_status_as_one_process(pack_dir, tmp_path) -> None:
    lines = tmp_path / "lines.txt"
    lines.write_bytes(LINES)
    one = batch(pack_dir, lines, tmp_path / "one", "--seed", "7")
    two = batch(pack_dir, lines, tmp_path / "two", "--seed", "7", "--jobs", "2")
    assert one.returncode == two.returncode == 1
    assert error_lines(one.stderr) == error_lines(two.stderr)
    assert [b"line 3" in e or b"line 5" in e for e in error_lines(one.stderr)] == [True, True]
    assert b"4 written, 0 already done, 2 failed" in one.stderr
    assert b"4 written, 0 already done, 2 failed" in two.stderr
    made = wavs(tmp_path / "one")
    assert sorted(made) == sorted(wavs(tmp_path / "two")) and len(made) == 4
    assert made == wavs(tmp_path / "two")  # byte for byte

    def by_id(out):
        made = [r for r in records(out) if r["id"] is not None]  # not the refused lines
        return {r["id"]: (r["seed"], r["key"], r["sha256"], r["file"]) for r in made}

    assert by_id(tmp_path / "one") == by_id(tmp_path / "two")
    # another base seed: other audio, other seeds
    other = batch(pack_dir, lines, tmp_path / "other", "--seed", "8", "--jobs", "2", "-q")
    assert other.returncode == 1
    assert wavs(tmp_path / "other")["a.wav"] != made["a.wav"]


def test_manifest_fields_and_the_plain_progress_line(pack_dir, tmp_path, voice_path) -> None:
    lines = tmp_path / "lines.txt"
    lines.write_bytes(b"x|Hello there. And again.\n")
    r = batch(pack_dir, lines, tmp_path / "out", "--seed", "1", "--voice-file", str(voice_path))
    assert r.returncode == 0, r.stderr
    (rec,) = records(tmp_path / "out")
    assert rec["id"] == "x" and rec["file"] == "x.wav" and rec["line"] == 1
    assert rec["status"] == "done" and rec["error"] is None
    assert rec["text"] == "Hello there. And again." and rec["language"] == "english"
    assert rec["voice"] == "voice" and isinstance(rec["seed"], int)
    import soundfile as sf

    info = sf.info(tmp_path / "out" / "x.wav")
    assert rec["duration"] == pytest.approx(info.duration, abs=1e-6)
    assert rec["frames"] * 1920 <= info.frames and rec["chunks"] >= 1 and rec["seconds"] > 0
    assert rec["bytes"] == (tmp_path / "out" / "x.wav").stat().st_size
    assert b"batch: 1/1 lines" in r.stderr and b"RTFx" in r.stderr and b"ETA" in r.stderr
    # the recorded seed remakes the line alone, byte for byte
    alone = tmp_path / "alone.wav"
    r = run(
        "tts",
        rec["text"],
        "--seed",
        str(rec["seed"]),
        "--voice-file",
        str(voice_path),
        "--model-dir",
        str(pack_dir),
        "-o",
        str(alone),
        "-q",
    )
    assert r.returncode == 0, r.stderr
    assert alone.read_bytes() == (tmp_path / "out" / "x.wav").read_bytes()


def test_one_bad_line_never_stops_the_rest_and_is_made_once_fixed(pack_dir, tmp_path) -> None:
    lines = tmp_path / "lines.txt"
    lines.write_bytes(b"a|One.\nb|Two.\nc|Three.\n")
    out = tmp_path / "out"
    (out / "b.wav").mkdir(parents=True)  # a directory is never "done" and cannot be replaced
    r = batch(pack_dir, lines, out, "--seed", "1", "--jobs", "2")
    assert r.returncode == 1
    (err,) = error_lines(r.stderr)
    assert err.startswith(b"pockettts: line 2 (b): cannot write ") and b"directory" in err
    assert b"2 written, 0 already done, 1 failed" in r.stderr and b"Traceback" not in r.stderr
    assert (out / "b.wav").is_dir() and sorted(wavs(out)) == ["a.wav", "c.wav"]
    failed = [rec for rec in records(out) if rec["status"] == "failed"]
    assert [(f["id"], f["line"]) for f in failed] == [("b", 2)] and "directory" in failed[0][
        "error"
    ]
    (out / "b.wav").rmdir()
    again = batch(pack_dir, lines, out, "--seed", "1")
    assert again.returncode == 0, again.stderr
    assert b"1 written, 2 already done, 0 failed" in again.stderr


def test_edited_lines_and_changed_settings_are_made_again(pack_dir, tmp_path) -> None:
    lines = tmp_path / "lines.txt"
    out = tmp_path / "out"
    lines.write_bytes(b"a|One.\nb|Two.\nPlain three.\n")
    assert batch(pack_dir, lines, out, "-q").returncode == 0
    first = wavs(out)
    # no --seed: a re-run skips everything (a fresh base seed is not a new setting)
    assert b"0 written, 3 already done" in batch(pack_dir, lines, out).stderr
    lines.write_bytes(b"a|One.\nb|Two, edited.\nPlain three.\n")
    r = batch(pack_dir, lines, out)
    assert b"1 written, 2 already done" in r.stderr
    assert wavs(out)["b.wav"] != first["b.wav"] and wavs(out)["a.wav"] == first["a.wav"]
    r = batch(pack_dir, lines, out, "--no-deess")  # another setting: everything again
    assert b"3 written, 0 already done" in r.stderr
    # a file replaced behind the manifest's back is made again
    (out / "a.wav").write_bytes(b"not the recorded file")
    assert b"1 written, 2 already done" in batch(pack_dir, lines, out, "--no-deess").stderr
    assert len({rec["id"] for rec in records(out)}) == 3


def _start(pack_dir, lines: Path, out: Path, *extra: str) -> subprocess.Popen:
    env = cli_env()
    return subprocess.Popen(
        [SCRIPT, "tts", "--input-file", str(lines), "--output-dir", str(out)]
        + ["--model-dir", str(pack_dir), "--seed", "3", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )


def _wait_for_records(out: Path, count: int, proc: subprocess.Popen, limit: float = 90) -> list:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        path = out / "manifest.jsonl"
        if path.exists():
            done = [json.loads(x) for x in path.read_bytes().splitlines() if x.endswith(b"}")]
            if len(done) >= count:
                return done
        assert proc.poll() is None, proc.communicate()[1]
        time.sleep(0.02)
    raise AssertionError("the batch made too few lines in time")


def _long_lines(tmp_path: Path, count: int) -> Path:
    lines = tmp_path / "lines.txt"
    text = "This sentence is long enough to take the tiny model a little while, really."
    lines.write_text("".join(f"s{i:03d}|{text} Number {i}.\n" for i in range(count)))
    return lines


def test_a_killed_run_resumes_with_exactly_the_missing_lines(pack_dir, tmp_path) -> None:
    lines, out = _long_lines(tmp_path, 30), tmp_path / "out"
    proc = _start(pack_dir, lines, out, "--jobs", "2")
    _wait_for_records(out, 4, proc)
    proc.kill()  # SIGKILL: no cleanup at all; the workers stop when their pipes close
    _, err = proc.communicate(timeout=60)  # stderr ends when the orphaned workers have ended
    assert b"Traceback" not in err  # a worker whose driver is gone stops quietly
    with open(out / "manifest.jsonl", "ab") as f:  # as if killed in the middle of a record
        f.write(b'{"id":"s029","status":"done","key":"')
    before = {r["id"] for r in records_tolerant(out)}
    assert 4 <= len(before) < 30
    r = batch(pack_dir, lines, out, "--seed", "3")
    assert r.returncode == 0, r.stderr
    assert f"{30 - len(before)} written, {len(before)} already done".encode() in r.stderr
    ids = [rec["id"] for rec in records(out)]
    assert sorted(ids) == sorted(f"s{i:03d}" for i in range(30))  # each once: none lost or twice
    assert not list(out.glob(".*.part"))  # what the kill left half-written is cleaned up
    fresh = tmp_path / "fresh"
    assert batch(pack_dir, lines, fresh, "--seed", "3", "-q").returncode == 0
    assert wavs(fresh) == wavs(out)


def records_tolerant(out: Path) -> list[dict]:
    raw = (out / "manifest.jsonl").read_bytes().splitlines()
    return [json.loads(x) for x in raw if x.endswith(b"}")]


def _making(out: Path, pid: int, proc: subprocess.Popen, limit: float = 90) -> None:
    """Waits until worker ``pid`` has a line in flight (its hidden .part file is there)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if any(f".wav.{pid}.part" in p.name for p in out.glob(".*.part")):
            return
        assert proc.poll() is None, proc.communicate()[1]
        time.sleep(0.005)
    raise AssertionError(f"worker {pid} made no line in time")


def _every_line_done(proc: subprocess.Popen, out: Path, count: int) -> tuple[bytes, list]:
    """Waits for a batch of ``_long_lines(count)``: exit 0, each line done once; (stderr,
    records)."""
    _, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, err
    recs = records(out)
    assert sorted(r["id"] for r in recs) == sorted(f"s{i:03d}" for i in range(count))
    assert all(r["status"] == "done" for r in recs) and b"Traceback" not in err
    return err, recs


def test_a_killed_worker_costs_only_its_lines_in_flight(pack_dir, tmp_path) -> None:
    # Killed in the middle of a line, or (the race that gave a silent exit 1) between
    # its last result and the driver's next send: the batch goes on either way.
    lines, out = _long_lines(tmp_path, 24), tmp_path / "out"
    proc = _start(pack_dir, lines, out, "--jobs", "2")
    done = _wait_for_records(out, 3, proc)
    victim = int(done[-1]["worker"].split("@")[0])
    _making(out, victim, proc)
    os.kill(victim, signal.SIGKILL)
    err, recs = _every_line_done(proc, out, 24)
    assert b"died (killed by SIGKILL" in err and b"made again" in err
    assert f"{victim}@" in " ".join(r["worker"] for r in recs)  # it made lines before dying
    fresh = tmp_path / "fresh"
    assert batch(pack_dir, lines, fresh, "--seed", "3", "-q").returncode == 0
    assert wavs(fresh) == wavs(out)


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--jobs", "0"], b"--jobs"),
        (["--jobs", "many"], b"--jobs"),
    ],
)
def test_bad_jobs_values_are_usage_errors(pack_dir, tmp_path, extra, message) -> None:
    lines = tmp_path / "lines.txt"
    lines.write_bytes(b"One.\n")
    r = batch(pack_dir, lines, tmp_path / "out", *extra)
    assert r.returncode == 2 and message in r.stderr


def test_jobs_and_ray_need_a_batch(pack_dir) -> None:
    for extra in (["--jobs", "2"], ["--ray"]):
        r = run("tts", "Hi.", "--model-dir", str(pack_dir), *extra)
        assert r.returncode == 2 and b"--input-file" in r.stderr


def test_ray_without_the_extra_says_what_to_install(pack_dir, tmp_path) -> None:
    lines = tmp_path / "lines.txt"
    lines.write_bytes(b"One.\n")
    code = "import sys; sys.modules['ray'] = None; from pocketcli.cli.main import run; run()"
    r = subprocess.run(
        [sys.executable, "-c", code, "tts", "--input-file", str(lines)]
        + ["--output-dir", str(tmp_path / "out"), "--model-dir", str(pack_dir), "--ray"],
        capture_output=True,
        timeout=120,
    )
    assert r.returncode == 1
    assert r.stderr.strip().splitlines() == [
        b"pockettts: error: --ray needs Ray: pip install 'pockettts[ray]' (or: pip install ray)"
    ]


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupting_a_jobs_run_stops_workers_and_keeps_what_is_done(
    pack_dir, tmp_path, sig, code
) -> None:
    lines, out = _long_lines(tmp_path, 40), tmp_path / "out"
    proc = _start(pack_dir, lines, out, "--jobs", "2")
    done = _wait_for_records(out, 2, proc)
    workers = {int(r["worker"].split("@")[0]) for r in done}
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert b"Traceback" not in err and _said(err) == [], err  # tts's normal stop: no line
    assert not list(out.glob(".*.part"))
    for pid in workers:  # no worker outlives the run
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    recorded = records_tolerant(out)
    assert {r["file"] for r in recorded} <= {p.name for p in out.glob("*.wav")}
    r = batch(pack_dir, lines, out, "--seed", "3", "-q")
    assert r.returncode == 0 and len(records(out)) == 40


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs CPU affinity (Linux)")
def test_jobs_auto_on_one_core_makes_the_lines_in_the_calling_process(pack_dir, tmp_path) -> None:
    lines = tmp_path / "lines.txt"
    lines.write_bytes(b"a|One.\nb|Two.\n")
    env = {k: v for k, v in os.environ.items() if k not in ("POCKETTTS_DEBUG", "POCKETTTS_THREADS")}
    proc = subprocess.Popen(
        [SCRIPT, "tts", "--input-file", str(lines), "--output-dir", str(tmp_path / "out")]
        + ["--model-dir", str(pack_dir), "--jobs", "auto", "-q"],
        stderr=subprocess.PIPE,
        env=env,
        preexec_fn=lambda: os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}),
    )
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert {r["worker"].split("@")[0] for r in records(tmp_path / "out")} == {str(proc.pid)}


def test_lines_refused_for_their_text_have_a_failed_record(pack_dir, tmp_path) -> None:
    # README: any failure on one line, its text included, is a failed record in the manifest.
    lines = tmp_path / "lines.txt"
    lines.write_bytes(b"a|Fine.\n\xff broken\nb|\x00nul\n")
    out = tmp_path / "out"
    r = batch(pack_dir, lines, out, "--seed", "1")
    assert r.returncode == 1
    failed = {rec["line"]: rec for rec in records(out) if rec["status"] == "failed"}
    assert sorted(failed) == [2, 3]
    assert failed[2]["error"].startswith("not UTF-8 text") and failed[2]["id"] is None
    assert failed[3]["error"] == "contains NUL bytes"
    again = batch(pack_dir, lines, out, "--seed", "1")
    assert b"unreadable" not in again.stderr  # such records are read back without complaint
    assert b"0 written, 1 already done, 2 failed" in again.stderr


def _start_jobs_batch_in_own_group(lines: Path, out: Path, pack_dir: Path) -> subprocess.Popen:
    """A `--jobs 2` batch in a process group of its own, so a test can signal the group."""
    env = cli_env()
    return subprocess.Popen(
        [SCRIPT, "tts", "--input-file", str(lines), "--output-dir", str(out)]
        + ["--model-dir", str(pack_dir), "--seed", "3", "--jobs", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,
    )


def _said(err: bytes) -> list[bytes]:
    """stderr's lines but the plain progress lines (``batch: 3/30 lines, ...``), which a
    batch prints every 10 s off a terminal: on a loaded machine one may come first."""
    return [line for line in err.strip().splitlines() if not PROGRESS.match(line)]


PROGRESS = re.compile(rb"batch: \d+/\d+ lines, ")


def test_sigterm_to_the_whole_group_stops_a_jobs_batch_quietly(pack_dir, tmp_path) -> None:
    # `timeout`, `docker stop` or `kill -- -PGID` signal the workers too: they must die
    # quietly, not each with a traceback, and the driver too (SIGTERM is tts's normal stop).
    lines, out = _long_lines(tmp_path, 30), tmp_path / "out"
    proc = _start_jobs_batch_in_own_group(lines, out, pack_dir)
    _wait_for_records(out, 2, proc)
    os.killpg(proc.pid, signal.SIGTERM)
    _, err = proc.communicate(timeout=30)  # ends when the workers are gone too
    assert proc.returncode == 143, err
    assert b"Traceback" not in err and _said(err) == [], err  # tts stops quietly
    assert not list(out.glob(".*.part"))


@pytest.mark.parametrize(
    ("delay", "signum", "code"),
    [(0.3, signal.SIGTERM, 143), (0.6, signal.SIGTERM, 143), (0.9, signal.SIGTERM, 143)],
)
def test_group_signal_while_workers_start_is_quiet(pack_dir, tmp_path, delay, signum, code):
    # `timeout` or `docker stop` reaches the workers too while they are still importing
    # (the console script's handlers are installed again in each): none may print a
    # traceback or be reported as died, and the driver says nothing either. (Ctrl-C in the
    # first tens of ms of a worker, while CPython itself starts, is still CPython's own.)
    lines, out = _long_lines(tmp_path, 60), tmp_path / "out"
    for _ in range(6):  # a run that cannot check this is tried again with another delay
        shutil.rmtree(out, ignore_errors=True)
        proc = _start_jobs_batch_in_own_group(lines, out, pack_dir)
        time.sleep(delay)
        os.killpg(proc.pid, signum)
        _, err = proc.communicate(timeout=30)
        if proc.returncode == -signum:  # landed in CPython's own start-up: later
            delay *= 2
        elif proc.returncode == 0:  # the batch was done by then: sooner
            delay /= 2
        else:
            break
    else:
        pytest.skip(f"the signal never landed while workers start (last exit {proc.returncode})")
    assert proc.returncode == code, err
    assert b"Traceback" not in err and b"died" not in err, err
    assert _said(err) == [], err
    assert not list(out.glob(".*.part"))
