"""``pockettts tts --noise-clamp`` through the real console script (the statistics of the
truncation are compared with pocket-tts in tests/oracle/test_noise.py)."""

from __future__ import annotations

import numpy as np
import soundfile as sf

from tests.support.cli import run


def _speak(pack_dir, tmp_path, name: str, *extra: str) -> np.ndarray:
    out = tmp_path / f"{name}.wav"
    r = run("tts", "Clamped noise.", "-o", str(out), "--model-dir", str(pack_dir), "--seed",
            "4", "--temperature", "1.0", "--no-deess", "-q", *extra)  # fmt: skip
    assert r.returncode == 0, r.stderr
    return sf.read(out, dtype="float32")[0]


def test_noise_clamp_changes_the_audio_and_repeats(pack_dir, tmp_path) -> None:
    free = _speak(pack_dir, tmp_path, "free")
    clamped = _speak(pack_dir, tmp_path, "clamped", "--noise-clamp", "0.2")
    again = _speak(pack_dir, tmp_path, "again", "--noise-clamp", "0.2")
    assert np.array_equal(clamped, again)
    assert free.shape != clamped.shape or not np.array_equal(free, clamped)


def test_bad_noise_clamp_is_a_usage_error(pack_dir, tmp_path) -> None:
    for bad in ("0", "-1", "nan"):
        out = tmp_path / "never.wav"
        r = run("tts", "x", "-o", str(out), "--model-dir", str(pack_dir), "--noise-clamp", bad)
        assert r.returncode == 2, (bad, r.stderr)
        assert b"noise" in r.stderr.lower() and b"Traceback" not in r.stderr
        assert not out.exists()
