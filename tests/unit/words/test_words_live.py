"""``--words -``: each word on standard output as it is decided (issue 35 item 3), in
``--follow`` (words of a line before the next line is even written), ``--play`` (on ALSA's
null device) and a plain run; never beside audio on stdout. The real console script on the
tiny pack that times words."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from pathlib import Path

import pytest

from tests.support.cli import SCRIPT, cli_env, run
from tests.unit.audio.test_playback import null_device  # noqa: F401  (a fixture)

webvtt = pytest.importorskip("webvtt")

DEADLINE = 300.0  # seconds: a loaded machine is slow, not stuck


def _rows(out: bytes) -> list[dict]:
    return [json.loads(line) for line in out.decode().splitlines()]


def _in_order(rows: list[dict]) -> None:
    for row in rows:
        assert 0 <= row["start"] < row["end"], row
    for before, after in zip(rows, rows[1:], strict=False):
        assert before["end"] <= after["start"], (before, after)


def test_follow_prints_a_lines_words_before_the_next_line_comes(words_pack, tmp_path) -> None:
    args = ["tts", "--follow", "--model-dir", str(words_pack), "--seed", "2", "-q",
            "-o", str(tmp_path / "f.wav"), "--words", "-", "--captions"]  # fmt: skip
    proc = subprocess.Popen(
        [SCRIPT, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(),
    )
    lines: queue.Queue[bytes] = queue.Queue()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(b"")

    threading.Thread(target=read, daemon=True).start()
    try:
        assert proc.stdin is not None
        proc.stdin.write(b"Hello there, my friend.\n")
        proc.stdin.flush()
        first = json.loads(lines.get(timeout=DEADLINE))  # while stdin is still open
        assert first["word"] in ("Hello", "there", "my", "friend")
        proc.stdin.write(b"Second line here.\n")
        proc.stdin.close()
        assert proc.wait(timeout=DEADLINE) == 0, proc.stderr.read() if proc.stderr else ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    rest = []
    while (line := lines.get(timeout=DEADLINE)) != b"":
        rest.append(json.loads(line))
    rows = [first, *rest]
    _in_order(rows)
    said = iter(["Hello", "there", "my", "friend", "Second", "line", "here"])
    assert all(r["word"] in said for r in rows)  # the text's words, in order (some passed over)
    assert rows[-1]["word"] in ("Second", "line", "here")
    cues = list(webvtt.read(str(tmp_path / "f.vtt")))  # beside -o f.wav, written at the end
    assert " ".join(c.text for c in cues) == " ".join(r["word"] for r in rows)


def test_play_prints_the_words_a_file_run_writes(words_pack, tmp_path, null_device) -> None:  # noqa: F811
    text = "Hello there, this is the longest line. It is spoken in several chunks!"
    played = run("tts", text, "--play", "--model-dir", words_pack, "--seed", "3", "-q",
                 "--words", "-", env=null_device)  # fmt: skip
    assert played.returncode == 0, played.stderr
    filed = run("tts", text, "--model-dir", words_pack, "--seed", "3", "-q",
                "-o", tmp_path / "a.wav", "--words", tmp_path / "a.json")  # fmt: skip
    assert filed.returncode == 0, filed.stderr
    rows = _rows(played.stdout)
    assert len(rows) >= 6
    _in_order(rows)
    assert rows == json.loads((tmp_path / "a.json").read_text(encoding="utf-8"))
    # normalised text: the user's own words, in a session as in a file run
    costs = ("It costs $5 and 3 cats.", "--model-dir", words_pack, "--seed", "3", "-q",
             "--eos-threshold", "1000", "--words", "-")  # fmt: skip
    played = run("tts", *costs, "--play", env=null_device)
    filed = run("tts", *costs, "-o", tmp_path / "c.wav")
    assert played.returncode == 0 and filed.returncode == 0, (played.stderr, filed.stderr)
    assert [r["word"] for r in _rows(played.stdout)] == ["It", "costs", "$5", "and", "3", "cats"]
    assert _rows(played.stdout) == _rows(filed.stdout)
    # and a run to a file prints them too, as they are decided
    printed = run("tts", text, "--model-dir", words_pack, "--seed", "3", "-q",
                  "-o", tmp_path / "b.wav", "--words", "-")  # fmt: skip
    assert _rows(printed.stdout) == rows


def test_follow_with_audio_on_stdout_writes_the_words_file_after_it(words_pack, tmp_path) -> None:
    """``--follow -o - --words FILE``: stdout is the stream of the run without --words, byte
    for byte; the words go whole into FILE at the end (as a file run's)."""
    lines = b"Hello there, my friend.\nSecond line here.\n"
    args = ("tts", "--follow", "--model-dir", words_pack, "--seed", "2", "-q", "-o", "-")
    plain = run(*args, stdin=lines)
    both = run(*args, "--words", tmp_path / "f.json", stdin=lines)
    assert plain.returncode == 0 and both.returncode == 0, (plain.stderr, both.stderr)
    assert both.stdout == plain.stdout and plain.stdout[:4] == b"RIFF"
    rows = json.loads((tmp_path / "f.json").read_text(encoding="utf-8"))
    _in_order(rows)
    said = iter(["Hello", "there", "my", "friend", "Second", "line", "here"])
    assert len(rows) >= 4 and all(r["word"] in said for r in rows)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["x", "-o", "-", "--words", "-"], "standard output carries the audio"),
        (["x", "--play", "--words"], "give -o FILE"),
        (["x", "-o", "a.wav", "--captions", "srtx"], ".srt or .vtt"),
    ],
)
def test_words_where_they_cannot_go_are_a_usage_error(
    pack_dir, tmp_path, args: list[str], said: str
) -> None:
    done = run("tts", *args, "--model-dir", pack_dir, cwd=tmp_path)
    assert done.returncode == 2 and said in done.stderr.decode(), done.stderr
    assert done.stdout == b"" and list(Path(tmp_path).iterdir()) == []
