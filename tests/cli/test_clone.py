"""``pockettts clone``: the real console script, run as a subprocess on the tiny pack."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from safetensors.numpy import load_file, save_file

from pocketcli.voices.state import load_voice_state
from tests.support.cli import run
from tests.support.paths import DATA

SPEECH = DATA / "speech"
LIBRI = SPEECH / "librispeech" / "librispeech_test_other_7902-96591-0001.wav"


def _one_line_error(r: subprocess.CompletedProcess, code: int, text: bytes) -> None:
    assert r.returncode == code, r.stderr
    assert text in r.stderr, r.stderr
    assert b"Traceback" not in r.stderr
    if code == 1:
        assert r.stderr.count(b"\n") == 1 and r.stderr.startswith(b"pockettts: error: ")


def test_clone_equals_the_oracle_state(pack_dir, fixture_dir, reference, tmp_path) -> None:
    out = tmp_path / "voice.safetensors"
    r = run("clone", fixture_dir / reference["clone"]["prompt"], "-o", out, "--model-dir", pack_dir)
    assert r.returncode == 0, r.stderr
    assert b"wrote" in r.stderr and b"frames" in r.stderr
    ours = load_voice_state(out)
    oracle = load_voice_state(fixture_dir / reference["clone"]["voice"])
    assert ours.length == oracle.length
    for a, b in zip(ours.keys + ours.values, oracle.keys + oracle.values, strict=True):
        assert np.abs(a - b).max() <= 1e-4
    assert set(load_file(str(out))) == set(load_file(str(fixture_dir / "clone_voice.safetensors")))


def test_bin_round_trip_through_tts(pack_dir, tmp_path) -> None:
    voice = tmp_path / "speaker.bin"
    r = run("clone", LIBRI, "-o", voice, "--model-dir", pack_dir, "-q")
    assert r.returncode == 0, r.stderr
    assert r.stderr == b""
    size = voice.stat().st_size
    assert size % (64 * 4) == 0 and 20 <= size // (64 * 4) <= 125
    wavs = []
    for name, voice_file in (("a", voice), ("b", voice)):
        out = tmp_path / f"{name}.wav"
        r = run(
            "tts",
            "Hello there.",
            "-o",
            out,
            "--model-dir",
            pack_dir,
            "--voice-file",
            voice_file,
            "--seed",
            "3",
            "-q",
        )
        assert r.returncode == 0, r.stderr
        wavs.append(out.read_bytes())
    assert wavs[0] == wavs[1]
    audio, rate = sf.read(tmp_path / "a.wav")
    assert rate == 24_000 and np.abs(audio).max() > 0


def test_long_prompt_to_bin_is_cut_with_a_warning(pack_dir, tmp_path) -> None:
    long = SPEECH / "librispeech" / "librispeech_test_clean_6930-75918-0001.wav"  # 14.2 s
    r = run("clone", long, "-o", tmp_path / "v.bin", "--model-dir", pack_dir, "-q")
    assert r.returncode == 0, r.stderr
    assert b"pockettts: warning:" in r.stderr and b"kept the first 125" in r.stderr
    assert (tmp_path / "v.bin").stat().st_size == 125 * 64 * 4


def _bytes(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _wav(path: Path, audio: np.ndarray, rate: int = 24_000) -> Path:
    sf.write(path, audio.astype(np.float32), rate, subtype="FLOAT")
    return path


@pytest.mark.parametrize(
    "make, message",
    [
        (
            lambda p: _wav(p / "short.wav", 0.3 * np.sin(np.arange(12_000) / 9.0)),
            b"too short for voice cloning: 0.50 s",
        ),
        (lambda p: _wav(p / "silent.wav", np.zeros(72_000)), b"is silent"),
        (
            lambda p: _wav(
                p / "nan.wav",
                np.where(np.arange(48_000) == 99, np.nan, 0.3 * np.sin(np.arange(48_000) / 9.0)),
            ),
            b"NaN or infinite",
        ),
        (lambda p: _bytes(p / "corrupt.wav", b"RIFF\x10\x00\x00\x00WAVEjunk" * 3), b"cannot read"),
        (lambda p: _bytes(p / "notes.txt", b"hello\n" * 50), b"cannot read"),
        (lambda p: p / "missing.wav", b"audio file not found"),
    ],
)
def test_bad_audio_is_one_line(pack_dir, tmp_path, make, message) -> None:
    out = tmp_path / "voice.safetensors"
    r = run("clone", make(tmp_path), "-o", out, "--model-dir", pack_dir)
    _one_line_error(r, 1, message)
    assert not out.exists() and not list(tmp_path.glob(".*part"))


@pytest.mark.parametrize(
    "args, code, message",
    [
        (["clone", "{audio}", "-o", "{out}", "--language", "klingon"], 2, b"english"),
        (
            ["clone", "{audio}", "-o", "{out}", "--language", "french", "--model-dir", "{pack}"],
            2,
            b"--model-dir already names the model",
        ),
        (
            ["clone", "{audio}", "-o", "{tmp}/voice.wav", "--model-dir", "{pack}"],
            2,
            b"unknown voice file type",
        ),
        (["clone", "{audio}", "--model-dir", "{pack}"], 2, b"-o"),
        (
            ["clone", "{audio}", "-o", "{out}", "--model-dir", "{tmp}/nopack"],
            1,
            b"model pack not found",
        ),
        (
            ["clone", "{audio}", "-o", "{tmp}/no/dir/v.safetensors", "--model-dir", "{pack}"],
            1,
            b"v.safetensors: its folder does not exist",
        ),
    ],
)
def test_usage_and_model_errors(pack_dir, tmp_path, args, code, message) -> None:
    filled = [
        a.format(audio=LIBRI, out=tmp_path / "v.safetensors", tmp=tmp_path, pack=pack_dir)
        for a in args
    ]
    _one_line_error(run(*filled), code, message)


def test_pack_without_cloning_weights_gives_the_gated_repo_message(fixture_dir, tmp_path):
    from pocketcli.config import ModelConfig
    from pocketcli.packs.builder import build_pack

    weights = load_file(str(fixture_dir / "model.safetensors"))
    zeroed = {
        k: (np.zeros_like(v) if k.startswith("mimi.encoder") else v) for k, v in weights.items()
    }
    save_file(zeroed, str(tmp_path / "model.safetensors"))
    build_pack(
        tmp_path / "model.safetensors",
        ModelConfig.from_yaml(fixture_dir / "config.yaml"),
        fixture_dir / "pack" / "tokenizer.model",
        tmp_path / "pack",
    )
    r = run("clone", LIBRI, "-o", tmp_path / "v.safetensors", "--model-dir", tmp_path / "pack")
    _one_line_error(r, 1, b"gated Hugging Face repository kyutai/pocket-tts")
    assert b"hf auth login" in r.stderr and b"accept its terms" in r.stderr


def test_help_has_examples() -> None:
    r = run("clone", "--help")
    assert r.returncode == 0
    assert b"Examples:" in r.stdout and b"pockettts clone" in r.stdout
