"""pockettts tts as a Unix tool: stdout streaming, signals, metrics, flags (batch files:
tests/cli/batch/test_run.py)."""

from __future__ import annotations

import io
import json
import signal
import subprocess
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from pocketcli import PocketTTS
from pocketcli.audio.postprocess import OutputChain
from pocketcli.options import SpeakOptions
from tests.support.cli import SCRIPT, cli_env, run
from tests.support.waiting import DEADLINE, wait_until_writing


def test_stdout_stream_is_a_readable_wav_equal_to_the_raw_audio(loud_pack_dir, voice_path) -> None:
    pack_dir = loud_pack_dir  # raw audio past full scale: the stream must clip, not wrap
    r = run(
        "tts",
        "Streaming to a pipe. Two sentences.",
        "-o",
        "-",
        "--model-dir",
        str(pack_dir),
        "--voice-file",
        str(voice_path),
        "--seed",
        "2",
        "--no-deess",
        "-q",
    )
    assert r.returncode == 0, r.stderr
    audio, rate = sf.read(io.BytesIO(r.stdout), dtype="int16")
    assert rate == 24_000
    tts = PocketTTS.open(runtime="onnx", model_dir=pack_dir)
    expected = tts.synthesize(
        "Streaming to a pipe. Two sentences.",
        tts.voices.load(voice_path),
        options=SpeakOptions(seed=2, output_chain=False),
    )
    assert audio.shape == expected.shape
    assert np.abs(expected).max() > 1.0 and expected.min() < 0  # the fixture is loud
    pcm = np.clip(expected, -1, 1) * 32767  # saturated at full scale, never wrapped
    assert np.abs(audio - pcm).max() <= 0.5 + 1e-3


def test_stdout_stream_applies_the_causal_output_chain(loud_pack_dir) -> None:
    pack_dir = loud_pack_dir
    r = run("tts", "Filtered stream.", "-o", "-", "--model-dir", str(pack_dir), "--seed", "4", "-q")
    audio, _ = sf.read(io.BytesIO(r.stdout), dtype="int16")
    tts = PocketTTS.open(runtime="onnx", model_dir=pack_dir)
    raw = tts.synthesize("Filtered stream.", None, options=SpeakOptions(seed=4, output_chain=False))
    filtered = OutputChain(24_000).process(raw)
    assert np.abs(filtered).max() > 1.0  # some samples must be clipped
    assert np.abs(audio - np.clip(filtered, -1, 1) * 32767).max() <= 0.5 + 1e-3


def test_stdout_on_a_full_disk_is_one_line(pack_dir) -> None:
    with open("/dev/full", "wb") as full:
        r = run(
            "tts",
            "Disk full.",
            "-o",
            "-",
            "--model-dir",
            str(pack_dir),
            "-q",
            stdout=full,
            stderr=subprocess.PIPE,
        )
    assert r.returncode == 1
    assert b"cannot write standard output: the disk is full" in r.stderr, r.stderr


def test_file_output_is_peak_normalised_with_or_without_deess(loud_pack_dir, tmp_path) -> None:
    """FluidAudio's --no-deess drops the filters; its WAV writer still peak-normalises."""
    pack_dir = loud_pack_dir  # negative peak larger than the positive one, past full scale
    for flag, name in (([], "chain.wav"), (["--no-deess"], "raw.wav")):
        r = run(
            "tts",
            "Loud and clear.",
            "-o",
            str(tmp_path / name),
            "--model-dir",
            str(pack_dir),
            "--seed",
            "1",
            "-q",
            *flag,
        )
        assert r.returncode == 0, r.stderr
    chain, _ = sf.read(tmp_path / "chain.wav", dtype="float32")
    raw, _ = sf.read(tmp_path / "raw.wav", dtype="float32")
    assert np.abs(chain).max() == pytest.approx(1.0, abs=1e-4)
    assert np.abs(raw).max() == pytest.approx(1.0, abs=1e-4)
    assert chain.shape == raw.shape
    tts = PocketTTS.open(runtime="onnx", model_dir=pack_dir)
    model = tts.synthesize(
        "Loud and clear.", None, options=SpeakOptions(seed=1, output_chain=False)
    )
    assert -model.min() > model.max() > 1.0
    assert np.abs(raw - model / np.abs(model).max()).max() <= 2 / 32767  # 16-bit truncation
    assert np.abs(chain - raw).max() > 0.01  # the filters did something


def test_metrics_json_has_fluidaudio_keys(pack_dir, tmp_path) -> None:
    out, report = tmp_path / "m.wav", tmp_path / "m.json"
    r = run(
        "tts",
        "Metrics.",
        "-o",
        str(out),
        "--model-dir",
        str(pack_dir),
        "--metrics",
        str(report),
        "-q",
    )
    assert r.returncode == 0, r.stderr
    data = json.loads(report.read_text())
    for key in (
        "backend",
        "text",
        "voice",
        "output",
        "model_load_time_s",
        "inference_time_s",
        "audio_duration_s",
        "realtime_speed",
        "total_time_s",
    ):
        assert key in data
    assert data["backend"] == "pockettts" and data["text"] == "Metrics."
    assert data["audio_duration_s"] == pytest.approx(sf.info(out).duration, abs=1e-3)


@pytest.mark.parametrize(
    "flag, value, valid",
    [
        ("--compute-units", "gpu-only", b"no-ane"),
        ("--placement", "npu", b"gpu, ane"),
        ("--runtime", "tensorflow", b"auto, onnx, coreml"),
        ("--backend", "kokoro", b"pocket"),
        ("--precision", "fp16", b"fp32, int8"),
    ],
)
def test_unknown_values_are_usage_errors_listing_valid_ones(pack_dir, flag, value, valid) -> None:
    r = run("tts", "Hi.", "--model-dir", str(pack_dir), flag, value)
    assert r.returncode == 2
    assert valid in r.stderr


def test_fluidaudio_flags_are_accepted(pack_dir, tmp_path) -> None:
    r = run(
        "tts",
        "Compatible.",
        "-o",
        str(tmp_path / "x.wav"),
        "--model-dir",
        str(pack_dir),
        "--backend",
        "pocket",
        "--compute-units",
        "avoid-ane",
        "--placement",
        "gpu",
        "-q",
    )
    assert r.returncode == 0, r.stderr


def test_coreml_on_linux_says_why_in_one_line(pack_dir) -> None:
    r = run("tts", "Hi.", "--model-dir", str(pack_dir), "--runtime", "coreml")
    assert r.returncode == 1
    assert b"needs macOS" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_long_text_without_punctuation_is_spoken(pack_dir, tmp_path) -> None:
    words = ("river stone light " * 400).strip()  # no sentence or clause marks
    r = run(
        "tts",
        "--model-dir",
        str(pack_dir),
        "-o",
        str(tmp_path / "long.wav"),
        "-q",
        stdin=words.encode(),
    )
    assert r.returncode == 0, r.stderr
    assert sf.info(tmp_path / "long.wav").duration > 10


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupt_leaves_no_partial_file(pack_dir, tmp_path, sig, code) -> None:
    # Far longer than any machine speaks before the signal (given on stdin).
    text = " ".join(f"Sentence number {i} is here." for i in range(8000))
    out = tmp_path / "long.wav"
    env = cli_env()
    proc = subprocess.Popen(
        [SCRIPT, "tts", "-o", str(out), "--model-dir", str(pack_dir), "-q"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdin is not None
    proc.stdin.write(text.encode())
    proc.stdin.close()
    wait_until_writing(proc, tmp_path)  # loaded, generating, its handlers armed
    proc.send_signal(sig)
    proc.wait(timeout=DEADLINE)
    assert proc.stderr is not None
    err = proc.stderr.read()
    assert proc.returncode == code, err
    assert err == b"", err  # tts's normal stop: the status says it, no line
    assert not out.exists()
    assert list(Path(tmp_path).iterdir()) == []


def test_pause_markup_gives_silence_unless_normalisation_is_off(pack_dir, tmp_path) -> None:
    text = "Before. [pause:1.5s] After."
    for flag, name in (([], "p.wav"), (["--no-normalize"], "raw.wav")):
        r = run(
            "tts",
            text,
            "-o",
            str(tmp_path / name),
            "--model-dir",
            str(pack_dir),
            "--seed",
            "1",
            "--no-deess",
            "-q",
            *flag,
        )
        assert r.returncode == 0, r.stderr
    paused, _ = sf.read(tmp_path / "p.wav", dtype="float32")
    raw, _ = sf.read(tmp_path / "raw.wav", dtype="float32")

    def longest_silence(x: np.ndarray) -> int:
        best = run_ = 0
        for v in x == 0:
            run_ = run_ + 1 if v else 0
            best = max(best, run_)
        return best

    assert longest_silence(paused) >= int(1.5 * 24_000)
    assert longest_silence(raw) < 24_000


def test_malformed_ssml_is_a_usage_error_naming_the_place(pack_dir, tmp_path) -> None:
    r = run(
        "tts",
        '<speak>Hi <break time="1s"/> there',
        "--model-dir",
        str(pack_dir),
        "-o",
        str(tmp_path / "x.wav"),
    )
    assert r.returncode == 2
    assert b"line 1, column" in r.stderr
    assert not (tmp_path / "x.wav").exists()
