"""Flags people bring from Kyutai's pocket-tts and from piper work, or are refused naming
ours; outputs that cannot be written or named are refused before any synthesis (real
subprocess runs on the tiny pack)."""

from __future__ import annotations

import pytest
import soundfile as sf

from tests.support.cli import run


def _usage_line(r) -> str:
    assert r.returncode == 2, r.stderr
    return r.stderr.decode().splitlines()[0]


def test_kyutai_and_piper_output_names_write_the_file(pack_dir, voice_path, tmp_path) -> None:
    for flag in ("--output-path", "--output_file"):
        out = tmp_path / f"{flag.strip('-')}.wav"
        r = run("tts", "Hi.", "--model-dir", str(pack_dir), "--voice-file", str(voice_path),
                flag, str(out), "--quantize", "-q")  # fmt: skip
        assert r.returncode == 0, r.stderr
        assert sf.info(out).samplerate == 24_000


def test_kyutai_voice_file_given_to_voice_is_read_as_a_voice_file(
    pack_dir, voice_path, tmp_path
) -> None:
    outs = []
    for flags in (["--voice", str(voice_path)], ["--voice-file", str(voice_path)]):
        out = tmp_path / f"{len(outs)}.wav"
        r = run("tts", "Same voice.", "--model-dir", str(pack_dir), "--seed", "3", *flags,
                "-o", str(out), "-q")  # fmt: skip
        assert r.returncode == 0, r.stderr
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]


def test_piper_raw_output_and_model_folder(pack_dir, voice_path) -> None:
    r = run("tts", "Raw.", "-m", str(pack_dir), "--voice-file", str(voice_path),
            "--output-raw", "--seed", "1", "-q")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert r.stdout[:4] != b"RIFF" and len(r.stdout) > 0 and len(r.stdout) % (2 * 1920) == 0


@pytest.mark.parametrize(
    "args, expected",
    [
        (["-m", "en_US-lessac-medium"], "--model-dir"),
        (["--quantize", "--precision", "fp32"], "--precision int8"),
        (["--frames-after-eos", "5000"], "--frames-after-eos must be from 0 to 1000"),
        (["--eos-threshold", "nan"], "--eos-threshold must be a number"),
    ],
)
def test_habits_that_cannot_mean_ours_name_our_flag(pack_dir, args, expected) -> None:
    r = run("tts", "Hi.", "--model-dir", str(pack_dir), *args)
    if args[0] == "-m":  # -m and --model-dir would both name the model: -m alone
        r = run("tts", "Hi.", *args)
    assert expected in _usage_line(r)


def test_an_unknown_extension_is_a_usage_error_naming_the_formats(pack_dir, tmp_path) -> None:
    out = tmp_path / "x.xyz"
    line = _usage_line(run("tts", "Hi.", "--model-dir", str(pack_dir), "-o", str(out)))
    assert "-o" in line and "'.xyz'" in line and ".flac" in line and "s16le" in line
    assert not out.exists()
    given = tmp_path / "x.data"  # the format named: the name is the user's business
    r = run("tts", "Hi.", "--model-dir", str(pack_dir), "-o", str(given), "--format", "wav", "-q")
    assert r.returncode == 0, r.stderr
    assert given.read_bytes()[:4] == b"RIFF"


def test_an_unwritable_metrics_file_is_found_before_synthesis(pack_dir, tmp_path) -> None:
    out = tmp_path / "x.wav"
    r = run("tts", "Hi.", "--model-dir", str(pack_dir), "-o", str(out),
            "--metrics", "/proc/m.json")  # fmt: skip
    assert r.returncode == 1
    assert r.stderr.decode().splitlines() == [
        "pockettts: error: cannot write metrics file /proc/m.json: /proc takes no new files"
        " (No such file or directory)"
    ]
    assert not out.exists()


def test_serve_takes_kyutais_default_voice_flag(pack_dir) -> None:
    pytest.importorskip("fastapi")
    r = run("serve", "--model-dir", str(pack_dir), "--default-voice", "nobody")
    assert r.returncode == 2  # a usage error, checked (and refused) before anything loads
    assert r.stderr.decode().startswith("pockettts: error: voice 'nobody' is not in ")
