"""Batch lines spoken together in one process (``--streams N``): the same files, manifest
and status as one line at a time, through the real CLI on the tiny pack."""

from __future__ import annotations

from tests.cli.batch.test_run import LINES, batch, error_lines, records, wavs


def _by_id(out) -> dict:
    made = [r for r in records(out) if r["id"] is not None]
    return {r["id"]: (r["seed"], r["key"], r["sha256"], r["file"], r["frames"]) for r in made}


def test_streams_make_the_same_files_and_manifest_as_one_at_a_time(pack_dir, tmp_path) -> None:
    lines = tmp_path / "lines.txt"
    lines.write_bytes(LINES)
    one = batch(pack_dir, lines, tmp_path / "one", "--seed", "7", "--streams", "1")
    four = batch(pack_dir, lines, tmp_path / "four", "--seed", "7", "--streams", "3")
    assert one.returncode == four.returncode == 1  # the two refused lines
    assert error_lines(one.stderr) == error_lines(four.stderr)
    assert b"4 written, 0 already done, 2 failed" in four.stderr
    made = wavs(tmp_path / "one")
    assert len(made) == 4 and made == wavs(tmp_path / "four")  # byte for byte
    assert _by_id(tmp_path / "one") == _by_id(tmp_path / "four")


def test_a_bad_streams_value_is_one_usage_line(pack_dir, tmp_path) -> None:
    lines = tmp_path / "lines.txt"
    lines.write_bytes(b"a|One.\n")
    for value in ("0",):
        r = batch(pack_dir, lines, tmp_path / "out", "--streams", value)
        assert r.returncode == 2
        assert b"--streams" in r.stderr and value.encode() in r.stderr
        assert b"Traceback" not in r.stderr
    r = batch(pack_dir, lines, tmp_path / "out", "--streams", "2", "--jobs", "2")
    assert r.returncode == 2 and b"--streams is for the one-process batch" in r.stderr
