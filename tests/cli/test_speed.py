"""``pockettts tts --speed`` (issue 36): one file, batch files with their manifest, and
--follow, each time-stretched as the library does it; out of range is a usage error."""

from __future__ import annotations

import json

import numpy as np
import pytest
import soundfile as sf

from pocketcli.api import PocketTTS
from pocketcli.options import SpeakOptions
from tests.support.cli import run

TEXT = "Speak a little faster, please."


def test_speed_writes_the_librarys_stretched_audio(tmp_path, pack_dir, voice_path) -> None:
    out, metrics = tmp_path / "fast.wav", tmp_path / "metrics.json"
    run("tts", TEXT, "-o", out, "--speed", "1.3", "--seed", "2", "--model-dir", pack_dir,
        "--voice-file", voice_path, "-q", "--metrics", metrics, check=True)  # fmt: skip
    tts = PocketTTS.open(model_dir=pack_dir)
    want = tts.synthesize(TEXT, voice_path, SpeakOptions(seed=2, speed=1.3))
    got, rate = sf.read(out, dtype="float32")
    assert rate == tts.sample_rate and len(got) == len(want)
    np.testing.assert_allclose(got, want, atol=2 / 32768)  # 16-bit rounding
    # --metrics: the audio delivered (stretched), and RTFx over it
    figures = json.loads(metrics.read_text())
    assert figures["audio_duration_s"] == pytest.approx(len(got) / rate, abs=1e-6)


def test_batch_files_and_manifest_durations_follow_the_speed(tmp_path, pack_dir) -> None:
    lines = tmp_path / "lines.txt"
    lines.write_text(f"{TEXT}\n")
    lengths = {}
    for speed in ("1", "2"):
        out = tmp_path / f"out{speed}"
        run("tts", "--input-file", lines, "--output-dir", out, "--speed", speed, "--seed", "1",
            "--model-dir", pack_dir, "-q", check=True)  # fmt: skip
        (wav,) = out.glob("*.wav")
        lengths[speed] = sf.info(wav).frames
        manifest = [json.loads(x) for x in (out / "manifest.jsonl").read_text().splitlines()]
        seconds = [v for k, v in manifest[-1].items() if "duration" in k or k == "seconds"]
        assert seconds and abs(seconds[0] - lengths[speed] / 24000) < 0.01, manifest
    assert lengths["2"] == round(lengths["1"] / 2)


def test_follow_speaks_each_line_at_the_speed(pack_dir) -> None:
    got = {}
    for speed in ("1", "0.5"):
        done = run("tts", "--follow", "-o", "-", "--format", "s16le", "--speed", speed,
                   "--seed", "1", "--model-dir", pack_dir, "-q",
                   stdin=f"{TEXT}\nAnd again.\n".encode(), check=True)  # fmt: skip
        got[speed] = len(done.stdout) // 2
    assert abs(got["0.5"] / got["1"] - 2) < 0.02


def test_a_speed_out_of_range_is_a_usage_error_naming_the_flag(tmp_path, pack_dir) -> None:
    for bad in ("9", "0.1", "fast"):
        done = run("tts", TEXT, "-o", tmp_path / "x.wav", "--speed", bad,
                   "--model-dir", pack_dir, text=True)  # fmt: skip
        assert done.returncode == 2 and "--speed" in done.stderr, done.stderr
        assert "Traceback" not in done.stderr and "Error:" not in done.stderr.split("\n")[-2]
    assert not (tmp_path / "x.wav").exists()
