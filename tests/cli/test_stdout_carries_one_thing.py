"""``-`` means standard output for every output of ``pockettts tts`` (``-o -``, ``--words -``,
``--captions -``, ``--metrics -``), and standard output carries one of them: a second is a
usage error (2) before anything is loaded or synthesised. The real console script on the
tiny packs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import soundfile as sf

from tests.support.cli import run


def _one_line_usage_error(done, *said: str) -> None:
    err = done.stderr.decode()
    assert done.returncode == 2, err
    error = [line for line in err.splitlines() if line.startswith("pockettts: error:")]
    assert len(error) == 1 and "Traceback" not in err, err  # one line (and the --help hint)
    assert all(s in error[0] for s in said), err
    assert done.stdout == b""


def test_metrics_dash_prints_the_metrics_and_writes_no_file_named_dash(pack_dir, tmp_path) -> None:
    done = run("tts", "Metrics on stdout.", "--model-dir", pack_dir, "--seed", "1", "-q",
               "-o", "a.wav", "--metrics", "-", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)  # the whole of stdout is the report
    assert report["backend"] == "pockettts" and report["text"] == "Metrics on stdout."
    assert report["output"] == str((tmp_path / "a.wav").resolve())
    assert report["audio_duration_s"] == pytest.approx(sf.info(str(tmp_path / "a.wav")).duration)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.wav"]  # no file "-"


@pytest.fixture(scope="module")
def words_pack(tmp_path_factory) -> Path:
    from tests.support.wordspack import build_words_pack

    return build_words_pack(tmp_path_factory.mktemp("stdout_words_pack"))


@pytest.mark.parametrize("follow", [False, True], ids=["text", "follow"])
def test_captions_dash_prints_what_the_vtt_file_holds(words_pack, tmp_path, follow) -> None:
    # The same words timed twice (one seed): once to standard output, once to a .vtt file.
    text = "Hello there, captions on standard output."
    said = ["--follow"] if follow else [text]
    common = ["tts", *said, "--model-dir", words_pack, "--seed", "4", "-q"]
    feed = (text + "\n").encode() if follow else None
    printed = run(*common, "-o", "a.wav", "--captions", "-", stdin=feed, cwd=tmp_path)
    assert printed.returncode == 0, printed.stderr
    written = run(*common, "-o", "b.wav", "--captions", "b.vtt", stdin=feed, cwd=tmp_path)
    assert written.returncode == 0, written.stderr
    vtt = (tmp_path / "b.vtt").read_bytes()
    assert vtt.startswith(b"WEBVTT\n\n") and b" --> " in vtt, vtt
    assert printed.stdout == vtt  # the whole of stdout, byte for byte
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.wav", "b.vtt", "b.wav"]  # no "-"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["-o", "-", "--metrics", "-"], ("--metrics -", "-o -", "carries the audio")),
        (["--output-raw", "--metrics", "-"], ("--metrics -", "carries the audio")),  # piper's
        (["-o", "a.wav", "--words", "-", "--metrics", "-"], ("--metrics -", "the words")),
        (["-o", "-", "--words", "-"], ("--words -", "carries the audio")),
        (["-o", "-", "--captions", "-"], ("--captions -", "carries the audio")),
        (["-o", "a.wav", "--captions", "-", "--metrics", "-"], ("--metrics -", "the captions")),
        (["-o", "a.wav", "--words", "-", "--captions", "-"], ("--captions -", "the words")),
    ],
)
def test_a_second_output_on_stdout_is_a_usage_error_before_any_work(
    pack_dir, tmp_path, args: list[str], said: tuple[str, ...]
) -> None:
    done = run("tts", "Two things on stdout.", "--model-dir", pack_dir, *args, cwd=tmp_path)
    _one_line_usage_error(done, *said)
    assert list(Path(tmp_path).iterdir()) == []  # nothing written: not the audio, not "-"
