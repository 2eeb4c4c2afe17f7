"""Batch lines as newcomers write them: a byte order mark, ids ending in .wav, ids that
differ only in case, too-long lines, and lines refused for their text (counted in the
progress, and accepted by scripts with --accept-refused)."""

from __future__ import annotations

from pathlib import Path

from pocketcli.batch import parse_batch
from pocketcli.batch.parse import MAX_LINE_BYTES
from tests.cli.batch.test_run import batch, records
from tests.support.cli import run


def test_a_byte_order_mark_is_dropped_from_the_first_line() -> None:
    (first, second) = parse_batch(b"\xef\xbb\xbfb1|Hello.\nb2|Bye.\n")
    assert (first.name, first.text, first.error) == ("b1", "Hello.", None)
    (plain,) = parse_batch(b"\xef\xbb\xbfHello there.\n")
    assert plain.text == "Hello there." and plain.name == parse_batch(b"Hello there.\n")[0].name
    # only a leading one: inside the text it is the user's character
    assert parse_batch(b"a|x\xef\xbb\xbfy\n")[0].text == "x\ufeffy"


def test_an_id_ending_in_wav_names_the_file_itself() -> None:
    items = parse_batch(b"b.wav|One.\nc.WAV|Two.\nd.wav.wav|Three.\n")
    assert [i.name for i in items] == ["b", "c", "d.wav"] and all(not i.error for i in items)
    (refused,) = [i for i in parse_batch(b"b|One.\nb.wav|Two.\n") if i.error]
    assert refused.line_number == 2 and "same file as line 1" in refused.error


def test_ids_that_differ_only_in_case_are_refused_on_the_later_line() -> None:
    items = parse_batch(b"a|One.\nA|Two.\nB.wav|Three.\nb|Four.\n")
    assert [i.error is None for i in items] == [True, False, True, False]
    assert "case-insensitive file system" in items[1].error and "line 1" in items[1].error
    assert "line 3" in items[3].error


def test_a_line_longer_than_the_limit_is_refused_without_its_text() -> None:
    long = b"x|" + b"a" * MAX_LINE_BYTES
    items = parse_batch(b"ok|Fine.\n" + long + b"\nafter|Still read.\n")
    assert [i.error is None for i in items] == [True, False, True]
    assert f"more than {MAX_LINE_BYTES}" in items[1].error and items[1].text == ""
    assert parse_batch(b"x|" + b"a" * (MAX_LINE_BYTES - 2))[0].error is None  # at the limit


def test_batch_writes_b_wav_once_and_refuses_a_case_twin(pack_dir, tmp_path) -> None:
    lines = tmp_path / "lines.txt"
    lines.write_bytes(b"\xef\xbb\xbfb.wav|One.\nA|Two.\na|Three.\n")
    out = tmp_path / "out"
    r = batch(pack_dir, lines, out, "--seed", "1")
    assert r.returncode == 1, r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["A.wav", "b.wav", "manifest.jsonl"]
    assert b"pockettts: line 3: id 'a' names the same file as line 2 ('A')" in r.stderr
    assert b"2 written, 0 already done, 1 failed (1 refused for their text)" in r.stderr


def test_refused_lines_count_in_the_progress_and_can_be_accepted(pack_dir, tmp_path) -> None:
    lines = tmp_path / "lines.txt"
    lines.write_bytes(b"a|Fine.\n\xff broken\nb|\x00nul\n")
    out = tmp_path / "out"
    first = batch(pack_dir, lines, out, "--seed", "1")
    assert first.returncode == 1  # README: 1 when a line is not made, refused ones included
    assert b"batch: 3/3 lines" in first.stderr  # the refused lines are in the total
    assert b"1 written, 0 already done, 2 failed (2 refused for their text)" in first.stderr
    again = batch(pack_dir, lines, out, "--seed", "1")
    assert again.returncode == 1 and b"batch: 2/2 lines" in again.stderr
    # a script that knows those lines cannot be made: nothing left to make is success
    accepted = batch(pack_dir, lines, out, "--seed", "1", "--accept-refused")
    assert accepted.returncode == 0, accepted.stderr
    assert b"0 written, 1 already done, 2 failed (2 refused" in accepted.stderr
    assert b"pockettts: line 2: not UTF-8" in accepted.stderr  # still said, still recorded
    assert [r["line"] for r in records(out) if r["status"] == "failed"] == [2, 3] * 3
    # a line that fails for another reason still fails the run
    (out / "a.wav").unlink()
    (out / "a.wav").mkdir()
    failing = batch(pack_dir, lines, out, "--seed", "1", "--accept-refused", "-q")
    assert failing.returncode == 1 and b"pockettts: line 1 (a): cannot write" in failing.stderr


def test_accept_refused_needs_a_batch(pack_dir, tmp_path: Path) -> None:
    r = run("tts", "Hi.", "--model-dir", str(pack_dir), "--accept-refused")
    assert r.returncode == 2 and b"--input-file" in r.stderr
