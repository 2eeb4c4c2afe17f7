"""The batch manifest and plan: what "done" means, seeds that do not depend on the worker,
torn and corrupt manifests, the --jobs split and the --ray argument."""

from __future__ import annotations

import io
import json
import os

import pytest

from pocketcli.batch.argv import bare_ray_means_local
from pocketcli.batch.jobs import auto_split, parse_jobs, threads_for
from pocketcli.batch.manifest import Manifest
from pocketcli.batch.parse import parse_batch
from pocketcli.batch.plan import BatchSettings, line_key, line_seed, make_job
from pocketcli.batch.progress import BatchProgress
from pocketcli.errors import UserError
from pocketcli.options import SpeakOptions


def settings(**changes) -> BatchSettings:
    base = dict(
        options=SpeakOptions(seed=5),
        base_seed=5,
        seed_given=True,
        model_id="m",
        voice_id="v",
        language="english",
        voice_name="alba",
    )
    return BatchSettings(**(base | changes))


def test_line_seeds_depend_on_base_and_name_only() -> None:
    items = parse_batch(b"a|One.\nb|Two.\n")
    jobs = [make_job(i, settings()) for i in items]
    again = [make_job(i, settings()) for i in reversed(items)]
    assert {j.name: j.seed for j in jobs} == {j.name: j.seed for j in again}
    assert jobs[0].seed != jobs[1].seed
    assert line_seed(5, "a") != line_seed(6, "a")
    assert all(0 <= j.seed < 2**64 for j in jobs)


def test_key_changes_with_text_and_every_setting_but_not_with_a_fresh_seed() -> None:
    s = settings()
    key = line_key(s, "Hello.")
    assert line_key(s, "Hello!") != key
    assert line_key(settings(voice_id="w"), "Hello.") != key
    assert line_key(settings(model_id="n"), "Hello.") != key
    assert line_key(settings(options=SpeakOptions(seed=5, temperature=0.5)), "Hello.") != key
    assert line_key(settings(options=SpeakOptions(seed=5, output_chain=False)), "Hello.") != key
    assert line_key(settings(base_seed=6, options=SpeakOptions(seed=6)), "Hello.") != key
    # without --seed each run draws a new base seed; finished lines must still count
    loose = settings(options=SpeakOptions(), seed_given=False)
    assert line_key(loose, "Hello.") == line_key(
        loose.__class__(**{**loose.__dict__, "base_seed": 9}), "Hello."
    )


def _done(path, name="a", key="k", data=b"RIFF....") -> dict:
    target = path / f"{name}.wav"
    target.write_bytes(data)
    st = target.stat()
    import hashlib

    return {
        "id": name,
        "status": "done",
        "key": key,
        "bytes": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "sha256": hashlib.sha256(data).hexdigest(),
    }


def test_done_needs_the_record_the_key_and_the_same_regular_file(tmp_path) -> None:
    with Manifest(tmp_path / "manifest.jsonl") as m:
        m.append(_done(tmp_path, "a"))
        m.append(_done(tmp_path, "b"))
        m.append(_done(tmp_path, "c"))
        m.append({"id": "c", "status": "failed", "error": "boom"})  # the last record wins
    (tmp_path / "b.wav").write_bytes(b"RIFF....longer")  # changed size
    with Manifest(tmp_path / "manifest.jsonl") as m:
        assert m.is_done("a", "k", tmp_path / "a.wav")
        assert not m.is_done("a", "other key", tmp_path / "a.wav")  # edited text or settings
        assert not m.is_done("b", "k", tmp_path / "b.wav")
        assert not m.is_done("c", "k", tmp_path / "c.wav")
        assert not m.is_done("d", "k", tmp_path / "d.wav")
    # touched (or copied) but the same bytes: still done; same size, other bytes: not
    os.utime(tmp_path / "a.wav", ns=(1, 1))
    with Manifest(tmp_path / "manifest.jsonl") as m:
        assert m.is_done("a", "k", tmp_path / "a.wav")
    (tmp_path / "a.wav").write_bytes(b"RIFF,,,,")
    with Manifest(tmp_path / "manifest.jsonl") as m:
        assert not m.is_done("a", "k", tmp_path / "a.wav")


def test_a_directory_named_like_the_output_is_not_done(tmp_path) -> None:
    record = _done(tmp_path, "a")
    (tmp_path / "a.wav").unlink()
    (tmp_path / "a.wav").mkdir()
    (tmp_path / "manifest.jsonl").write_text(json.dumps(record) + "\n")
    with Manifest(tmp_path / "manifest.jsonl") as m:
        assert not m.is_done("a", "k", tmp_path / "a.wav")


def test_torn_last_line_is_cut_and_garbage_is_counted(tmp_path) -> None:
    path = tmp_path / "manifest.jsonl"
    good = json.dumps(_done(tmp_path, "a"))
    path.write_text(good + "\nnot json\n[1, 2]\n" + '{"id": "b", "status": "do')
    with Manifest(path) as m:
        assert m.torn and m.unreadable == 2
        assert m.is_done("a", "k", tmp_path / "a.wav")
        m.append({"id": "x", "status": "failed", "error": "e"})
    lines = path.read_text().splitlines()
    assert lines[-1] == '{"id":"x","status":"failed","error":"e"}'  # appended after the cut
    assert all(not line.startswith('{"id": "b"') for line in lines)


def test_two_runs_cannot_share_a_manifest(tmp_path) -> None:
    with Manifest(tmp_path / "manifest.jsonl"), pytest.raises(UserError, match="locked"):
        Manifest(tmp_path / "manifest.jsonl")


def test_a_manifest_that_is_a_directory_is_one_clear_error(tmp_path) -> None:
    (tmp_path / "manifest.jsonl").mkdir()
    with pytest.raises(UserError, match="manifest"):
        Manifest(tmp_path / "manifest.jsonl")


def test_jobs_values_and_the_split_of_cores() -> None:
    assert parse_jobs(None) is None and parse_jobs("auto") == "auto" and parse_jobs("3") == 3
    for bad in ("0", "-1", "x", "1.5", "99999"):
        with pytest.raises(ValueError):
            parse_jobs(bad)
    assert threads_for(4, cores=64) == 16 and threads_for(3, cores=2) == 1
    workers, threads = auto_split("int8", lines=1000, cores=64)
    assert workers * threads <= 64 and workers >= 1
    assert auto_split("int8", lines=1, cores=64)[0] == 1  # never more workers than lines
    assert auto_split("int8", lines=1000, cores=2) == (1, 2)  # measured: two cores a worker
    assert auto_split("fp32", lines=1000, cores=1) == (1, 1)


def test_bare_ray_means_a_local_instance() -> None:
    assert bare_ray_means_local(["tts", "--ray"]) == ["tts", "--ray", "local"]
    assert bare_ray_means_local(["--ray", "-q"]) == ["--ray", "local", "-q"]
    assert bare_ray_means_local(["--ray", "auto"]) == ["--ray", "auto"]
    assert bare_ray_means_local(["--", "--ray"]) == ["--", "--ray"]


def test_progress_bar_on_a_terminal_and_plain_lines_elsewhere() -> None:
    term = io.StringIO()
    with BatchProgress(4, stream=term, terminal=True) as p:
        p.line_done(1800.0)
        p.note("pockettts: line 2: boom")
        p.line_done(1800.0)
    text = term.getvalue()
    assert "2/4 lines" in text and "1.000 h audio" in text and "RTFx" in text and "ETA" in text
    assert "line 2: boom" in text
    plain = io.StringIO()
    with BatchProgress(3, stream=plain, terminal=False, interval=0.0) as p:
        for _ in range(3):
            p.line_done(2.0)
    rows = plain.getvalue().splitlines()
    assert rows[0].startswith("batch: 1/3 lines") and rows[-1].startswith("batch: 3/3 lines")
    assert "ETA 0:00:00" in rows[-1] and "\x1b" not in plain.getvalue()
    quiet = io.StringIO()
    with BatchProgress(3, stream=quiet, quiet=True, interval=0.0) as p:
        p.line_done(2.0)
    assert quiet.getvalue() == ""


def test_a_file_of_another_size_with_the_recorded_mtime_is_not_done(tmp_path) -> None:
    # rsync -t, cp -p or a restore keep the time: only the size tells the file changed
    record = _done(tmp_path, "a", data=b"RIFF....")
    (tmp_path / "manifest.jsonl").write_text(json.dumps(record) + "\n")
    (tmp_path / "a.wav").write_bytes(b"RIFF....and more")
    os.utime(tmp_path / "a.wav", ns=(record["mtime_ns"], record["mtime_ns"]))
    with Manifest(tmp_path / "manifest.jsonl") as m:
        assert not m.is_done("a", "k", tmp_path / "a.wav")


def test_a_record_is_fsynced_after_it_is_written(tmp_path, monkeypatch) -> None:
    synced: list[tuple[int, int]] = []
    real_fsync = os.fsync

    def spy(fd: int) -> None:
        synced.append((os.fstat(fd).st_ino, os.fstat(fd).st_size))
        real_fsync(fd)

    path = tmp_path / "manifest.jsonl"
    with Manifest(path) as m:
        monkeypatch.setattr(os, "fsync", spy)
        m.append({"id": "a", "status": "failed", "error": "e"})
        # on disk before append returns: the manifest itself, with the whole record in it
        assert synced == [(path.stat().st_ino, path.stat().st_size)]
        assert path.read_bytes().endswith(b"}\n")


def test_a_symlinked_manifest_is_never_followed(tmp_path) -> None:
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_bytes(b"precious\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "manifest.jsonl").symlink_to(outside)
    with pytest.raises(UserError, match="symbolic link") as caught:
        Manifest(out / "manifest.jsonl")
    assert str(out / "manifest.jsonl") in str(caught.value)
    assert outside.read_bytes() == b"precious\n"  # neither read into nor written to


def test_a_huge_record_is_skipped_in_bounded_memory(tmp_path) -> None:
    import tracemalloc

    from pocketcli.batch.manifest import MAX_RECORD_BYTES

    path = tmp_path / "manifest.jsonl"
    good = json.dumps(_done(tmp_path, "a"))
    with open(path, "wb") as f:  # one 24 MiB line between two good records
        f.write(b'{"id":"x","text":"')
        for _ in range(24):
            f.write(b"y" * (1 << 20))
        f.write(b'"}\n' + good.encode() + b"\n")
    tracemalloc.start()
    try:
        with Manifest(path) as m:
            peak = tracemalloc.get_traced_memory()[1]
            assert m.unreadable == 1 and m.is_done("a", "k", tmp_path / "a.wav")
    finally:
        tracemalloc.stop()
    assert peak < 4 * MAX_RECORD_BYTES < 24 << 20  # bounded by the limit, not the line
    # a too-long line torn by a kill at the end is cut like any torn record
    with open(path, "ab") as f:
        f.write(b"z" * (3 * MAX_RECORD_BYTES))
    with Manifest(path) as m:
        assert m.torn and m.is_done("a", "k", tmp_path / "a.wav")
    assert path.read_bytes().endswith(good.encode() + b"\n")


def test_a_failed_write_leaves_the_manifest_as_it_was(tmp_path) -> None:
    import resource
    import signal

    from pocketcli.batch.manifest import ManifestWriteError

    path = tmp_path / "manifest.jsonl"
    path.write_bytes(b" " * 1000 + b"\n")
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    old = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    m = Manifest(path)
    try:  # as a full disk: the first bytes fit, the rest of the record does not
        resource.setrlimit(resource.RLIMIT_FSIZE, (1010, hard))
        with pytest.raises(ManifestWriteError, match=str(path)):
            m.append({"id": "a", "status": "failed", "error": "e" * 100})
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, old)
        m.close()  # never raises what the failed write left behind
    assert path.read_bytes() == b" " * 1000 + b"\n"
