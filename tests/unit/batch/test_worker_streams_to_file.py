"""A batch line is streamed through the library's file writer (memory is bounded
by the model, not by the input), and still gives the bytes of the whole-array WAV."""

from __future__ import annotations

import io
import tracemalloc
from pathlib import Path

import pytest
import soundfile as sf

from pocketcli.api import PocketTTS
from pocketcli.audio.output import to_pcm16
from pocketcli.batch.plan import Job
from pocketcli.batch.worker import LineWorker
from pocketcli.options import SpeakOptions


@pytest.fixture(scope="module")
def worker(pack_dir, voice_path) -> LineWorker:
    tts = PocketTTS.open(model_dir=pack_dir)
    return LineWorker(tts, tts.voices.get(voice_path), SpeakOptions())


def test_line_file_has_the_bytes_of_the_whole_utterance(worker, tmp_path) -> None:
    text = "The first line. And a second sentence, to make two chunks."
    result = worker.make(Job(3, "a", text, 11, "k", spool=str(tmp_path)))
    assert result.error is None and result.wav is None
    part = Path(result.path)
    assert part.parent == tmp_path and part.name.startswith(".line3.wav.")
    audio = worker.tts.synthesize(text, worker.voice, worker.options.with_(seed=11))
    whole = io.BytesIO()
    sf.write(whole, to_pcm16(audio), worker.tts.sample_rate, subtype="PCM_16", format="WAV")
    assert part.read_bytes() == whole.getvalue()
    assert result.duration == pytest.approx(audio.size / worker.tts.sample_rate)
    assert result.frames > 0 and result.chunks >= 1


def test_ray_bytes_are_the_streamed_file(worker, tmp_path) -> None:
    job = Job(1, "a", "One line for a remote driver.", 5, "k", spool=str(tmp_path))
    made = worker.make(job)
    sent = worker.make_bytes(job)
    assert sent.job == job and sent.path is None
    assert sent.wav == Path(made.path).read_bytes()


def test_a_long_line_is_not_held_in_memory(worker, tmp_path) -> None:
    # Whole-array synthesis holds every frame, their concatenation and the PCM copy:
    # at least twice the float32 audio. Streamed, Python holds a few blocks.
    text = "The quick brown fox jumps over the lazy dog. " * 400
    tracemalloc.start()
    try:
        result = worker.make(Job(1, "long", text, 7, "k", spool=str(tmp_path)))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.error is None
    float_audio = (Path(result.path).stat().st_size - 44) * 2  # float32 bytes of the line
    assert float_audio > 4_000_000
    assert peak < float_audio / 2, (peak, float_audio)


def test_a_failed_line_leaves_no_part_file(worker, tmp_path) -> None:
    job = Job(1, "a", "Some text.", 5, "k", spool=str(tmp_path / "missing"))
    result = worker.make(job)
    assert result.path is None and result.error
    assert f"{tmp_path / 'missing' / 'a.wav'}:" in result.error  # the user's file...
    assert ".part" not in result.error  # ... never the hidden one the worker streams into
    assert list(tmp_path.iterdir()) == []
