"""The real console script, run as a subprocess on the committed tiny pack."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf

from tests.support.cli import run


def test_writes_24khz_mono_wav(pack_dir, voice_path, tmp_path) -> None:
    out = tmp_path / "hello.wav"
    r = run(
        "tts",
        "Hello from the command line.",
        "-o",
        str(out),
        "--model-dir",
        str(pack_dir),
        "--voice-file",
        str(voice_path),
        "--seed",
        "1",
    )
    assert r.returncode == 0, r.stderr
    audio, rate = sf.read(out, dtype="float32")
    info = sf.info(out)
    assert rate == 24_000 and info.channels == 1 and info.subtype == "PCM_16"
    assert audio.ndim == 1 and len(audio) % 1920 == 0 and np.abs(audio).max() > 0
    assert b"RTFx" in r.stderr


def test_same_seed_same_file(pack_dir, tmp_path) -> None:
    files = []
    for name, seed in (("a", "5"), ("b", "5"), ("c", "6")):
        out = tmp_path / f"{name}.wav"
        r = run(
            "tts",
            "Same seed.",
            "-o",
            str(out),
            "--model-dir",
            str(pack_dir),
            "--seed",
            seed,
            "--temperature",
            "0.8",
            "-q",
        )
        assert r.returncode == 0, r.stderr
        assert r.stderr == b""
        files.append(out.read_bytes())
    assert files[0] == files[1]
    assert files[0] != files[2]


def test_text_from_stdin_and_default_output(pack_dir, tmp_path) -> None:
    r = run("tts", "--model-dir", str(pack_dir), "-q", stdin=b"Piped text.\n", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "output.wav").stat().st_size > 44


@pytest.mark.parametrize(
    "args, stdin, code, message",
    [
        (["tts", "Hi.", "--model-dir", "{missing}"], None, 1, b"model pack not found"),
        (
            ["tts", "Hi.", "--model-dir", "{pack}", "--voice-file", "{junk}"],
            None,
            1,
            b"not a readable safetensors",
        ),
        (
            ["tts", "Hi.", "--model-dir", "{pack}", "--voice-file", "{missing}"],
            None,
            1,
            b"voice file not found",
        ),
        (["tts", "   ", "--model-dir", "{pack}"], None, 2, b"the text is empty"),
        (["tts", "--model-dir", "{pack}"], b"", 2, b"the text is empty"),
        (["tts", "--model-dir", "{pack}"], b"caf\xe9\x00", 2, b"not UTF-8"),
        (["tts", "Hi.", "--model-dir", "{pack}", "--bogus"], None, 2, b"No such option"),
        (["tts", "Hi.", "--model-dir", "{pack}", "--precision", "fp16"], None, 2, b"fp32, int8"),
        (["tts", "Hi.", "--model-dir", "{pack}", "--temperature", "-1"], None, 2, b"temperature"),
    ],
)
def test_bad_input_is_one_line_and_no_output(
    pack_dir, tmp_path, args, stdin, code, message
) -> None:
    junk = tmp_path / "junk.safetensors"
    junk.write_bytes(b"junk" * 100)
    out = tmp_path / "never.wav"
    filled = [a.format(missing=tmp_path / "missing", pack=pack_dir, junk=junk) for a in args]
    r = run(*filled, "-o", str(out), stdin=stdin)
    assert r.returncode == code, r.stderr
    assert message in r.stderr
    assert b"Traceback" not in r.stderr
    if code == 1:
        assert len(r.stderr.strip().splitlines()) == 1
    assert not out.exists()
    assert not list(tmp_path.glob(".never.wav*"))


def test_unwritable_destination_is_one_line(pack_dir, tmp_path) -> None:
    (tmp_path / "a-file").write_text("not a directory")
    r = run(
        "tts", "Hi.", "--model-dir", str(pack_dir), "-q", "-o", str(tmp_path / "a-file" / "x.wav")
    )
    assert r.returncode == 1
    assert b"Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_help_shows_examples() -> None:
    r = run("tts", "--help")
    assert r.returncode == 0 and b"Examples" in r.stdout and b"--model-dir" in r.stdout
