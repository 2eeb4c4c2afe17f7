"""``tts --follow``: standard input spoken as it arrives, as real subprocess runs."""

from __future__ import annotations

import re
import signal
import subprocess
import threading
import time

import pytest

from pocketcli.cli.live import split_ready
from tests.support.cli import SCRIPT, cli_env, run

HEADER = 44


def _args(pack_dir, voice_path) -> list[str]:
    return ["--model-dir", str(pack_dir), "--voice-file", str(voice_path), "--seed", "2", "-q"]


class _Follower:
    """``pockettts tts --follow -o -`` with its stdout read, and timed, on a thread."""

    def __init__(self, args: list[str]) -> None:
        env = cli_env()
        self.proc = subprocess.Popen(
            [SCRIPT, "tts", "--follow", "-o", "-", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        self.chunks: list[tuple[float, bytes]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while data := self.proc.stdout.read1(65536):
            self.chunks.append((time.monotonic(), data))

    def received(self, before: float | None = None) -> bytes:
        return b"".join(d for t, d in list(self.chunks) if before is None or t < before)

    def wait_for(self, size: int, seconds: float = 90.0) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if len(self.received()) >= size or self.proc.poll() is not None:
                return len(self.received()) >= size
            time.sleep(0.02)
        return False

    def write(self, data: bytes) -> float:
        self.proc.stdin.write(data)
        self.proc.stdin.flush()
        return time.monotonic()

    def finish(self) -> tuple[int, bytes]:
        try:
            rc = self.proc.wait(timeout=90)
        finally:
            self.proc.kill()
        self._reader.join(timeout=10)
        return rc, self.proc.stderr.read()


def test_the_first_line_is_heard_before_the_second_is_written(pack_dir, voice_path) -> None:
    alone = run("tts", "one", "-o", "-", *_args(pack_dir, voice_path))
    assert alone.returncode == 0, alone.stderr
    first_line_audio = alone.stdout  # header + the samples of "one" on its own
    assert len(first_line_audio) > HEADER + 2 * 1920

    follower = _Follower(_args(pack_dir, voice_path))
    follower.write(b"one\n")
    arrived = follower.wait_for(len(first_line_audio))
    second_written = follower.write(b"two\n")
    follower.proc.stdin.close()
    rc, stderr = follower.finish()
    assert rc == 0, stderr
    assert arrived, "no audio for the first line while the input was still open"
    early = follower.received(before=second_written)
    assert early.startswith(first_line_audio)  # the whole first line, exactly, and in time
    everything = follower.received()
    assert everything.startswith(first_line_audio)
    assert len(everything) > len(first_line_audio) + 2 * 1920  # "two" came after it
    assert (len(everything) - HEADER) % 2 == 0


def test_ctrl_c_ends_with_130_and_a_complete_stream(pack_dir, voice_path) -> None:
    follower = _Follower(_args(pack_dir, voice_path))
    follower.write(b"Something to say before the interrupt.\n")
    assert follower.wait_for(HEADER + 4 * 1920)
    follower.proc.send_signal(signal.SIGINT)
    rc, stderr = follower.finish()
    assert rc == 130, stderr
    assert stderr == b"", stderr  # Ctrl-C is how --follow ends: no error line
    out = follower.received()
    assert out[:4] == b"RIFF" and out[8:16] == b"WAVEfmt "
    assert (len(out) - HEADER) % 2 == 0


def test_text_on_a_line_of_its_own_is_spoken_at_end_of_input(pack_dir, voice_path) -> None:
    r = run("tts", "--follow", "-o", "-", *_args(pack_dir, voice_path), stdin=b"no newline")
    assert r.returncode == 0, r.stderr
    alone = run("tts", "no newline", "-o", "-", *_args(pack_dir, voice_path))
    assert r.stdout == alone.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--follow", "text"], "drop TEXT"),
        (["x", "--device", "0"], "--device goes with --play"),
        (["--play", "--input-file", "-", "--output-dir", "d"], "drop --input-file"),
    ],
)
def test_live_flag_misuse_is_a_usage_error(pack_dir, args, message) -> None:
    r = run("tts", *args, "--model-dir", str(pack_dir))
    assert r.returncode == 2
    assert message in r.stderr.decode()


def test_complete_lines_and_sentences_are_ready_the_rest_waits() -> None:
    assert split_ready("one\ntwo\nthr") == (["one", "two"], "thr")
    assert split_ready("Hello there. How are") == (["Hello there. "], "How are")
    assert split_ready('He said "yes!" and') == (['He said "yes!" '], "and")
    assert split_ready("3.5 percent") == ([], "3.5 percent")
    assert split_ready("\n\n  \nword") == ([], "word")


@pytest.mark.parametrize(("name", "fmt"), [("out.flac", None), ("out.audio", "s16le")])
def test_follow_writes_the_format_plain_tts_writes(pack_dir, voice_path, tmp_path, name, fmt):
    """-o NAME / --format pick the format with --follow too, file or stdout: the same bytes
    as plain ``tts`` for one line (they were always WAV)."""
    extra = ["--format", fmt] if fmt else []
    args = [*_args(pack_dir, voice_path), *extra]
    followed, plain = tmp_path / f"followed-{name}", tmp_path / name
    r = run("tts", "--follow", "-o", str(followed), *args, stdin=b"One line.\n")
    assert r.returncode == 0, r.stderr
    assert run("tts", "One line.", "-o", str(plain), *args).returncode == 0
    assert followed.read_bytes() == plain.read_bytes()
    if fmt:
        piped = run("tts", "--follow", "-o", "-", *args, stdin=b"One line.\n")
        alone = run("tts", "One line.", "-o", "-", *args)
        assert piped.returncode == 0 and piped.stdout == alone.stdout
        assert not piped.stdout.startswith(b"RIFF")


def test_follow_to_a_reader_that_goes_away_exits_quietly_like_tts(pack_dir, voice_path) -> None:
    """`... | pockettts tts --follow -o - | head -c 100`: 141 and no message, as plain tts."""
    proc = subprocess.Popen(
        [SCRIPT, "tts", "--follow", "-o", "-", *_args(pack_dir, voice_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        proc.stdin.write(b"First line.\n")
        proc.stdin.flush()
        assert len(proc.stdout.read(HEADER + 100)) == HEADER + 100
        proc.stdout.close()
        proc.stdin.write(b"A second line, after the reader went away.\n")
        proc.stdin.close()
        rc = proc.wait(60)
        err = proc.stderr.read()
    finally:
        proc.kill()
    assert rc == 141 and err == b"", (rc, err)


def test_the_summary_says_the_real_total_time(pack_dir, voice_path) -> None:
    """The input stays open 2 s after the first line is heard: ``total`` covers that
    (it used to print the synthesis time as the total: 0.137 s for a 3 s run)."""
    follower = _Follower(["--model-dir", str(pack_dir), "--voice-file", str(voice_path)])
    follower.write(b"one\n")
    assert follower.wait_for(HEADER + 2 * 1920), "no audio for the first line"
    held_from = time.monotonic()
    while time.monotonic() - held_from < 2.0:  # the user is still typing
        time.sleep(0.05)
    follower.proc.stdin.close()
    rc, stderr = follower.finish()
    assert rc == 0, stderr
    summary = stderr.decode().strip().splitlines()[-1]
    figures = dict(re.findall(r"(\w[\w ]*?) ([\d.]+) s", summary))
    assert float(figures["total"]) >= 2.0, summary
    assert float(figures["synthesis"]) < float(figures["total"]), summary
