"""Text from stdin or --input-file is read in checked blocks with a bound; FIFOs, devices
and sockets given as inputs are refused or read with that bound, never waited on for ever.
Real console-script subprocesses; an address-space limit keeps a regression from eating
the machine (it then fails with MemoryError instead)."""

from __future__ import annotations

import os
import resource
from functools import partial
from pathlib import Path

import pytest

from tests.support import cli
from tests.unit.voices.test_recording_bounds import _socket


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))


# Every run here is under an address-space limit.
run = partial(cli.run, preexec_fn=_limit_memory)


def _batch(pack_dir: Path, source: str | Path, out: Path) -> list[str | Path]:
    return ["tts", "--input-file", source, "--output-dir", out, "--model-dir", pack_dir]


@pytest.mark.parametrize("source", ["stdin", "input-file", "input-file -"])
def test_dev_zero_is_refused_as_binary_from_its_first_block(pack_dir, tmp_path, source):
    out = tmp_path / "out"
    with open("/dev/zero", "rb") as zero:
        if source == "stdin":
            r = run("tts", "-o", tmp_path / "x.wav", "--model-dir", pack_dir, stdin=zero)
        else:
            name = "-" if source.endswith("-") else "/dev/zero"
            r = run(*_batch(pack_dir, name, out), stdin=zero)
    assert r.returncode == 2, r.stderr
    assert b"NUL bytes" in r.stderr and b"Traceback" not in r.stderr, r.stderr
    assert not out.exists() and not (tmp_path / "x.wav").exists()


def test_text_over_the_bound_is_refused_with_its_setting(pack_dir, tmp_path) -> None:
    lines = tmp_path / "lines.txt"
    lines.write_text("Hello there.\n" * 200)
    small = {"POCKETTTS_MAX_INPUT_MB": "0.001"}
    r = run(*_batch(pack_dir, lines, tmp_path / "out"), env=cli.cli_env(**small))
    assert r.returncode == 1, r.stderr
    assert (
        r.stderr
        == (
            f"pockettts: error: {lines} holds more than 0.001 MB of text, the limit"
            " (set POCKETTTS_MAX_INPUT_MB to raise it)\n"
        ).encode()
    )


def test_a_fifo_with_no_writer_is_refused_at_once(pack_dir, tmp_path) -> None:
    fifo = tmp_path / "lines.fifo"
    os.mkfifo(fifo)
    r = run(*_batch(pack_dir, fifo, tmp_path / "out"))
    assert r.returncode == 1, r.stderr
    assert b"it is a FIFO (named pipe) with no writer" in r.stderr


def test_a_pipe_whose_writer_is_slow_is_still_read(pack_dir, voice_path, tmp_path) -> None:
    out = tmp_path / "out"
    # bash's <(...) is a pipe whose writer is there from the start but writes a second later.
    late = "--input-file <(sleep 1; echo 'a|Hello.')"
    args = ["tts", "--output-dir", out, "--model-dir", pack_dir, "--voice-file", voice_path]
    r = run(*args, "-q", shell=late)
    assert r.returncode == 0, r.stderr
    assert (out / "a.wav").stat().st_size > 44


def test_a_socket_is_refused_as_an_input_file(pack_dir, tmp_path) -> None:
    path = _socket(tmp_path)
    r = run(*_batch(pack_dir, path, tmp_path / "out"))
    assert r.returncode == 1 and b"it is a socket, not a text file" in r.stderr, r.stderr


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero"])
def test_special_files_are_refused_as_voice_files(pack_dir, tmp_path, kind) -> None:
    path = Path(kind)
    if kind == "fifo":
        path = tmp_path / "voice.safetensors"
        os.mkfifo(path)
    r = run("tts", "Hi.", "-o", tmp_path / "x.wav", "--voice-file", path, "--model-dir", pack_dir)
    assert r.returncode == 1, r.stderr
    what = b"a FIFO (named pipe)" if kind == "fifo" else b"a character device"
    assert f"voice file {path} is ".encode() + what + b", not a regular file" in r.stderr
