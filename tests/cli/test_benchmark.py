"""The benchmark harness on the committed tiny pack (real console script, real files)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import soundfile as sf

from pocketcli.bench.corpus import load_corpus, parse_corpus
from pocketcli.bench.fetch import minimax_lines
from pocketcli.bench.scoring import cer, normalize_for_scoring, wer
from pocketcli.errors import UserError
from tests.support.cli import run
from tests.support.paths import DATA


def test_shipped_corpus_has_the_100_english_phrases() -> None:
    phrases = load_corpus("minimax-english")
    assert len(phrases) == 100
    assert not any(p.startswith("#") for p in phrases)


def test_corpus_rules() -> None:
    assert parse_corpus("# header\n\n  one  \n#two\nthree\n") == ["one", "three"]
    assert minimax_lines("a.wav|Hello | there\n\nb.wav|Bye\n") == ["Hello | there", "Bye"]


def test_scoring_normalises_both_sides() -> None:
    assert normalize_for_scoring("Don't CRY, he said!") == "don't cry he said"
    assert wer("Don't cry, he said.", "don't cry he said") == 0.0
    assert wer("a b c d", "a x c") == pytest.approx(0.5)
    assert cer("abcd", "abed") == pytest.approx(0.25)
    # Both sides are read out the same way: digits and words score alike.
    assert wer("It is 3 km away.", "it is three kilometers away", "english") == 0.0
    assert wer("It is 3 km away.", "it is three kilometers away") > 0


def test_benchmark_report(pack_dir, voice_path, tmp_path) -> None:
    report_path, audio_dir = tmp_path / "bench.json", tmp_path / "wavs"
    r = run(
        "benchmark",
        "--model-dir",
        str(pack_dir),
        "--voice-file",
        str(voice_path),
        "--limit",
        "4",
        "--skip-asr",
        "--output-json",
        str(report_path),
        "--audio-dir",
        str(audio_dir),
    )
    assert r.returncode == 0, r.stderr
    assert b"aggregate RTFx" in r.stdout  # the table: on stdout
    assert b"\r" not in r.stderr and b"pockettts: 1/" in r.stderr  # progress off a terminal
    report = json.loads(report_path.read_text())
    assert report["schema"] == "pockettts-benchmark/1"
    summary, phrases = report["summary"], report["phrases"]
    assert summary["phrases"] == len(phrases) == 4
    assert [p["text"] for p in phrases] == load_corpus("minimax-english")[:4]
    audio = sum(p["audio_s"] for p in phrases)
    synth = sum(p["synth_ms"] for p in phrases) / 1000
    assert summary["agg_rtfx"] == pytest.approx(audio / synth, rel=1e-6)
    assert all(0 < p["ttft_ms"] <= p["synth_ms"] for p in phrases)
    assert summary["frames"] == sum(p["frame_count"] for p in phrases)
    assert set(report["stages_ms"]) == {"text_prefill", "flowlm_step", "flow_head", "mimi_decode"}
    assert summary["peak_rss_mb"] > 10
    for i, p in enumerate(phrases):
        wav, rate = sf.read(audio_dir / f"phrase_{i:03d}.wav")
        assert rate == 24_000 and len(wav) == p["frame_count"] * 1920
        assert np.abs(wav).max() == pytest.approx(1.0, abs=1e-4)
    assert summary["wer_macro"] is None and report["asr_backend"] is None
    # Each phrase once more through one live session: enqueue -> first frame.
    latencies = [p["session_first_frame_ms"] for p in phrases]
    assert all(lat > 0 for lat in latencies)
    for q in (50, 95):
        expected = float(np.percentile(latencies, q))
        assert summary[f"session_first_frame_ms_p{q}"] == pytest.approx(expected)
    assert b"enqueue to first frame" in r.stdout


def test_corpus_path_and_bad_options(pack_dir, tmp_path) -> None:
    lines = tmp_path / "mine.txt"
    lines.write_text("# my corpus\nFirst.\n\nSecond one.\n")
    out = tmp_path / "r.json"
    r = run(
        "benchmark",
        "--model-dir",
        str(pack_dir),
        "--corpus-path",
        str(lines),
        "--skip-asr",
        "-q",
        "--output-json",
        str(out),
    )
    assert r.returncode == 0, r.stderr
    assert [p["text"] for p in json.loads(out.read_text())["phrases"]] == ["First.", "Second one."]
    bad = run("benchmark", "--model-dir", str(pack_dir), "--corpus", "minimax-klingon")
    assert bad.returncode == 2 and b"'minimax-klingon'" in bad.stderr  # an unknown value
    assert b"english" in bad.stderr and b"--languages klingon" not in bad.stderr
    bad = run("corpus", "--languages", "klingon")
    assert bad.returncode == 2 and b"english" in bad.stderr


def test_asr_round_trip_on_real_speech() -> None:
    pytest.importorskip("pocketsphinx")

    from pocketcli.bench.asr import load_recognizer

    clip = DATA / "speech" / "librispeech"
    wavs = sorted(clip.glob("*7902-96591-0001.wav")) if clip.is_dir() else []
    if not wavs:
        pytest.skip("speech clips not present")
    audio, rate = sf.read(wavs[0], dtype="float32")
    recognizer = load_recognizer("pocketsphinx")
    hypothesis = recognizer.transcribe(audio, rate)
    truth = wavs[0].with_suffix(".txt").read_text()
    assert wer(truth, hypothesis) < 0.6  # a real recogniser on real speech


@pytest.mark.oracle
def test_compare_reference_prints_both_and_ratios(pack_dir, voice_path, tmp_path) -> None:
    """Both sides speak the same words (ours after reading out numbers and symbols), and
    the report says how many threads ours used and how many cores the machine has."""
    pytest.importorskip("pocket_tts")
    out = tmp_path / "r.json"
    corpus = tmp_path / "phrases.txt"
    corpus.write_text("It costs $5.\nHello world, 2 times.\n", encoding="utf-8")
    r = run(
        "benchmark",
        "--model-dir",
        str(pack_dir),
        "--voice-file",
        str(voice_path),
        "--corpus-path",
        str(corpus),
        "--skip-asr",
        "--compare-reference",
        "--output-json",
        str(out),
    )
    assert r.returncode == 0, r.stderr
    report = json.loads(out.read_text())
    reference = report["reference"]
    assert reference["label"].startswith("pocket-tts")
    for key in ("agg_rtfx", "ttft_ms_p50", "peak_rss_mb", "cold_start_s"):
        assert reference[key] > 0
        assert report["ratios"][key] > 0
    assert reference["audio_s"] == pytest.approx(report["summary"]["audio_s"], rel=0.01)
    assert [p["text"] for p in reference["phrases"]] == [
        "It costs five dollars.",
        "Hello world, two times.",
    ]
    assert reference["torch_threads"] >= 1
    settings = report["settings"]
    assert settings["threads"] >= 1 and settings["cpu_count"] == os.cpu_count()
    assert report["system"]["cpu_count"] == os.cpu_count()
    assert b"ratio" in r.stdout


def test_a_minimax_language_not_fetched_yet_says_how_to_fetch_it(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("POCKETTTS_CACHE", str(tmp_path))  # an empty store
    with pytest.raises(UserError, match="pockettts corpus --languages french"):
        load_corpus("minimax-french")
