"""Batch files with word timings (issue 35 item 3): ``--words`` and ``--captions`` with no
FILE (or a format) write each line's words and captions beside its WAV, with its stem; the
manifest lists them; each is written whole (nothing half-written, nothing at an output
path lost); the words are those of a single ``tts`` run of the line at the line's seed.
The real console script on the tiny pack that times words; captions read back by ``srt``
and ``webvtt-py``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import run

srt = pytest.importorskip("srt")
webvtt = pytest.importorskip("webvtt")

LINES = "one|It costs 5 dollars, friend.\ntwo|Hello there, this is the second line!\n"


def _batch(pack: Path, tmp_path: Path, *extra: str, out: str = "out", seed: int = 4):
    lines = tmp_path / "lines.txt"
    lines.write_text(LINES, encoding="utf-8")
    return run("tts", "--input-file", lines, "--output-dir", tmp_path / out,
               "--model-dir", pack, "--seed", str(seed), *extra)  # fmt: skip


def _records(folder: Path) -> dict[str, dict]:
    lines = (folder / "manifest.jsonl").read_text(encoding="utf-8").splitlines()
    return {r["id"]: r for r in map(json.loads, lines)}


def _words(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))


def test_each_line_has_its_words_and_captions_beside_it_as_one_tts_run(
    words_pack, tmp_path
) -> None:
    done = _batch(words_pack, tmp_path, "--streams", "2", "--words", "--captions", "srt", "-q")
    assert done.returncode == 0, done.stderr
    out = tmp_path / "out"
    records = _records(out)
    for name in ("one", "two"):
        assert records[name]["words"] == f"{name}.json"
        assert records[name]["captions"] == f"{name}.srt"
        listed = _words(out / f"{name}.json")
        assert len(listed) >= 3
        cues = list(srt.parse((out / f"{name}.srt").read_text(encoding="utf-8")))
        assert " ".join(c.content for c in cues) == " ".join(w["word"] for w in listed)
        assert cues[-1].end.total_seconds() == listed[-1]["end"]
    assert not list(out.glob(".*"))  # no temporary file left
    # The same words and audio as `tts` of the line alone, at the seed the manifest records.
    seed = str(records["two"]["seed"])
    alone = run("tts", "Hello there, this is the second line!", "--model-dir", words_pack,
                "--seed", seed, "-o", tmp_path / "alone.wav", "--words", "-q")  # fmt: skip
    assert alone.returncode == 0, alone.stderr
    assert _words(tmp_path / "alone.json") == _words(out / "two.json")
    assert (tmp_path / "alone.wav").read_bytes() == (out / "two.wav").read_bytes()


def test_worker_processes_write_the_same_words(words_pack, tmp_path) -> None:
    one = _batch(words_pack, tmp_path, "--words", "--captions", "-q", out="one")
    jobs = _batch(words_pack, tmp_path, "--jobs", "2", "--words", "--captions", "-q", out="jobs")
    assert one.returncode == 0 and jobs.returncode == 0, (one.stderr, jobs.stderr)
    assert len(_words(tmp_path / "jobs" / "two.json")) >= 3
    for name in ("one.json", "one.vtt", "two.json", "two.vtt"):
        assert (tmp_path / "jobs" / name).read_bytes() == (tmp_path / "one" / name).read_bytes()
    vtt = list(webvtt.read(str(tmp_path / "jobs" / "two.vtt")))
    assert " ".join(c.text for c in vtt) == " ".join(
        w["word"] for w in _words(tmp_path / "jobs" / "two.json")
    )


def test_a_rerun_makes_a_line_again_when_what_is_beside_it_is_missing(words_pack, tmp_path) -> None:
    first = _batch(words_pack, tmp_path, "--words", "--captions", "vtt")
    assert first.returncode == 0, first.stderr
    out = tmp_path / "out"
    again = _batch(words_pack, tmp_path, "--words", "--captions", "vtt")
    assert b"0 written, 2 already done" in again.stderr
    (out / "one.json").unlink()
    srt_now = _batch(words_pack, tmp_path, "--words", "--captions", "srt")
    assert b"2 written, 0 already done" in srt_now.stderr  # no .srt yet, one .json gone
    assert (out / "one.json").is_file() and (out / "one.srt").is_file()
    assert _records(out)["one"]["captions"] == "one.srt"
    # Words asked for where a run made the lines without: made again, with their words.
    plain = _batch(words_pack, tmp_path, out="plain")
    assert plain.returncode == 0 and not list((tmp_path / "plain").glob("*.json"))
    words = _batch(words_pack, tmp_path, "--words", out="plain")
    assert b"2 written" in words.stderr and (tmp_path / "plain" / "two.json").is_file()


def test_a_side_file_that_cannot_be_written_fails_its_line_and_keeps_what_was_there(
    words_pack, tmp_path
) -> None:
    out = tmp_path / "out"
    first = _batch(words_pack, tmp_path, seed=5)  # other audio than the run below
    assert first.returncode == 0, first.stderr
    kept = (out / "one.wav").read_bytes()
    (out / "one.json").mkdir()  # in the way of line one's words
    done = _batch(words_pack, tmp_path, "--words", "-q")
    assert done.returncode == 1
    said = [line for line in done.stderr.decode().splitlines() if "line 1" in line]
    assert len(said) == 1 and f"{out / 'one.json'}" in said[0], done.stderr
    assert (out / "one.wav").read_bytes() == kept  # the old WAV is not replaced
    assert not list(out.glob(".*"))  # no temporary file left
    records = _records(out)
    assert records["one"]["status"] == "failed" and "words" not in records["one"]
    assert records["two"]["status"] == "done" and (out / "two.json").is_file()


def test_a_pack_that_cannot_time_words_stops_the_batch_in_one_line(pack_dir, tmp_path) -> None:
    done = _batch(pack_dir, tmp_path, "--words")
    assert done.returncode == 1
    lines = done.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and "cannot time words" in lines[0], lines
    assert not list((tmp_path / "out").glob("*.wav"))


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--words", "w.json"], "beside its audio"),
        (["--words", "-"], "beside its audio"),
        (["--captions", "c.txt"], ".srt or .vtt"),
    ],
)
def test_named_word_files_in_a_batch_are_a_usage_error(
    pack_dir, tmp_path, extra: list[str], said: str
) -> None:
    done = _batch(pack_dir, tmp_path, *extra)
    assert done.returncode == 2 and said in done.stderr.decode(), done.stderr
    assert not (tmp_path / "out").exists()
