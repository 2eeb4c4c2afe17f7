"""A batch on a disk that fills up: each file that cannot be written is a failed line, and
a manifest that cannot be written stops the run with the summary and the manifest's path,
leaving no torn record. The full disk is a file size limit (RLIMIT_FSIZE) on the run: the
same OSError from the same writes, without needing a small file system."""

from __future__ import annotations

import errno
import os
import sys

import pytest

from tests.support.cli import run

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs RLIMIT_FSIZE")


def test_a_full_disk_stops_with_the_summary_and_the_manifest_path(pack_dir, tmp_path) -> None:
    import resource

    lines, out = tmp_path / "lines.txt", tmp_path / "out"
    lines.write_bytes(b"a|One.\nb|Two.\n")
    out.mkdir()
    filler = (b" " * 1023 + b"\n") * 2048  # 2 MiB of blank lines: far more than a WAV
    (out / "manifest.jsonl").write_bytes(filler)
    limit = len(filler) + 100  # room for the WAVs, none for a whole record

    def full_disk() -> None:  # Python ignores SIGXFSZ: a write past the limit fails (EFBIG)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    r = run("tts", "--input-file", lines, "--output-dir", out, "--model-dir", pack_dir,
            "--seed", "1", "-q", preexec_fn=full_disk)  # fmt: skip
    assert r.returncode == 1, r.stderr
    assert r.stderr.splitlines() == [
        b"batch: 0 written, 0 already done, 0 failed; 0.000 h of audio in "
        + r.stderr.split(b" h of audio in ")[1].split(b"\n")[0],
        f"pockettts: error: cannot write the manifest {out / 'manifest.jsonl'}: ".encode()
        + os.strerror(errno.EFBIG).encode(),  # as ENOSPC from a full disk
    ]
    assert r.stderr.splitlines()[0].endswith(b"; stopped")
    assert (out / "manifest.jsonl").read_bytes() == filler  # no torn record left behind
    assert not list(out.glob(".*.part"))


def test_a_stop_leaves_no_temporary_file_of_the_lines_in_flight(pack_dir, tmp_path) -> None:
    """Two lines in flight (``--streams 2``); the first's record cannot be written while the
    second is still being made: that line ends before its temporary file is cleaned up, so
    the run leaves none behind (it used to finish after the clean-up, on a loaded machine)."""
    import resource

    lines, out = tmp_path / "lines.txt", tmp_path / "out"
    long = " ".join(f"Sentence {i} keeps this line in flight for a while." for i in range(60))
    lines.write_text(f"a|One.\nb|{long}\n", encoding="utf-8")
    out.mkdir()
    filler = (b" " * 1023 + b"\n") * 2048
    (out / "manifest.jsonl").write_bytes(filler)
    limit = len(filler) + 100  # room for one short WAV, none for a record

    def full_disk() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    r = run("tts", "--input-file", lines, "--output-dir", out, "--model-dir", pack_dir,
            "--seed", "1", "-q", "--streams", "2", preexec_fn=full_disk)  # fmt: skip
    assert r.returncode == 1, r.stderr
    assert b"cannot write the manifest" in r.stderr, r.stderr
    assert not list(out.glob(".*.part")), sorted(p.name for p in out.iterdir())
    assert (out / "manifest.jsonl").read_bytes() == filler
