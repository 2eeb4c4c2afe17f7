"""Running the benchmark: FluidAudio's figures, measured through the streaming API.

Figures (FluidAudio's definitions): cold_start_s (model and voice load),
first_synth_ms (a warm-up phrase), per phrase ttft_ms (first 80 ms frame) and
synth_ms, agg_rtfx = sum(audio) / sum(synth), peak_rss_mb, per-stage ms,
frame_count, chunk_count, finished_on_eos, and WER/CER when a recogniser runs.
Each phrase is then spoken once more through one live session (``PocketTTS.session``),
for session_first_frame_ms: from ``enqueue(text)`` to its first frame, with the
voice already prepared and the session idle (a chat reply's latency).

With a reference (pocket-tts, ``--compare-reference``) the two sides alternate
phrase by phrase, and the reference is handed the text as we speak it after
reading it out (numbers, symbols), so both say the same words.
"""

from __future__ import annotations

import os
import platform
import resource
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from pocketcli.bench.asr import Recognizer
from pocketcli.bench.scoring import cer, wer
from pocketcli.bench.timing import TimedRuntime
from pocketcli.options import SpeakOptions

SCHEMA = "pockettts-benchmark/1"
WARM_UP_TEXT = "Initialization warm-up."


@dataclass
class PhraseResult:
    index: int
    text: str
    ttft_ms: float
    synth_ms: float
    audio_s: float
    rtfx: float
    frame_count: int
    chunk_count: int
    finished_on_eos: bool
    session_first_frame_ms: float | None = None
    asr_hypothesis: str | None = None
    wer: float | None = None
    cer: float | None = None


@dataclass
class Summary:
    phrases: int
    cold_start_s: float
    first_synth_ms: float
    ttft_ms_p50: float
    ttft_ms_p95: float
    synth_ms_p50: float
    synth_ms_p95: float
    agg_rtfx: float
    peak_rss_mb: float
    audio_s: float
    frames: int
    chunks: int
    finished_on_eos: int
    session_first_frame_ms_p50: float | None = None
    session_first_frame_ms_p95: float | None = None
    wer_macro: float | None = None
    cer_macro: float | None = None


@dataclass
class Report:
    summary: Summary
    stages_ms: dict[str, float]
    phrases: list[PhraseResult]
    settings: dict[str, Any] = field(default_factory=dict)
    asr_backend: str | None = None
    reference: dict[str, Any] | None = None
    ratios: dict[str, float] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "system": {
                "python": sys.version.split()[0],
                "platform": platform.platform(),
                "machine": platform.machine(),
                "cpu_count": os.cpu_count(),
            },
            "settings": self.settings,
            "asr_backend": self.asr_backend,
            "summary": asdict(self.summary),
            "stages_ms": self.stages_ms,
            "phrases": [asdict(p) for p in self.phrases],
            "reference": self.reference,
            "ratios": self.ratios,
        }


def percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, np.float64), q)) if values else 0.0


def peak_rss_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


class Reference(Protocol):
    """The other side of a comparison (``pocketcli.bench.reference.ReferenceSide``)."""

    def speak(self, text: str) -> dict[str, Any]: ...

    def summary(self) -> dict[str, Any]: ...


def spoken_text(tts, text: str, options: SpeakOptions) -> str:
    """``text`` as our side speaks it once read out (markup dropped, numbers and symbols
    in words): what the reference is handed, so both sides say the same words."""
    if not options.normalize:
        return text
    from pocketcli.normalize import Speech, normalize_text, parse_markup

    parts = parse_markup(text, ssml=options.ssml, language=tts.language)
    words = (normalize_text(p.text, tts.language) for p in parts if isinstance(p, Speech))
    return " ".join(w.strip() for w in words if w.strip())


def _speak(tts, text: str, voice, options: SpeakOptions) -> tuple[np.ndarray, float, float, list]:
    """Streams one phrase: (audio, ttft seconds, total seconds, chunk traces)."""
    traces: list = []
    frames = []
    start = time.perf_counter()
    first = None
    for frame in tts.stream(text, voice, options, on_chunk=traces.append):
        if first is None:
            first = time.perf_counter() - start
        frames.append(frame.audio)
    total = time.perf_counter() - start
    audio = np.concatenate(frames) if frames else np.zeros(0, np.float32)
    return audio, first or total, total, traces


def _session_first_frame(session, text: str) -> float:
    """Seconds from ``enqueue(text)`` to its first frame (its other frames are read too,
    so the session is idle again for the next phrase)."""
    start = time.perf_counter()
    session.enqueue(text)
    first = None
    for _ in session.until_idle():
        if first is None:
            first = time.perf_counter() - start
    return first if first is not None else time.perf_counter() - start


def run_benchmark(
    load: Callable[[], tuple[Any, Any]],
    phrases: Sequence[str],
    *,
    options: SpeakOptions | None = None,
    session_latency: bool = True,
    audio_dir: Path | None = None,
    recognizer: Recognizer | None = None,
    progress: Callable[[int, int], None] | None = None,
    reference: Callable[[], AbstractContextManager[Reference]] | None = None,
) -> Report:
    """``load`` returns (PocketTTS, voice); its duration is the cold start. ``reference``
    starts the other side once ours is loaded and warm; each phrase then runs on ours,
    then on the reference, and its ``summary()`` becomes ``Report.reference``.

    Phrases are streamed as FluidAudio's benchmark does: raw model audio, no
    output chain (``options`` default to ``SpeakOptions(output_chain=False)``)."""
    options = options or SpeakOptions(output_chain=False)
    start = time.perf_counter()
    tts, voice = load()
    cold_start = time.perf_counter() - start
    timed = TimedRuntime(tts.runtime)
    tts.runtime = timed

    _, _, first_synth, _ = _speak(tts, WARM_UP_TEXT, voice, options)
    timed.reset()

    results: list[PhraseResult] = []
    audios: list[np.ndarray] = []
    other: dict[str, Any] | None = None
    session = tts.session(voice, options) if session_latency else None
    try:
        with reference() if reference is not None else nullcontext() as side:
            for i, text in enumerate(phrases):
                results.append(_phrase(tts, i, text, voice, options, session, audio_dir, audios))
                if recognizer is None:
                    audios.clear()
                if side is not None:
                    side.speak(spoken_text(tts, text, options))
                if progress is not None:
                    progress(i + 1, len(phrases))
            if side is not None:
                other = side.summary()
    finally:
        if session is not None:
            session.cancel()
    stages = timed.per_call_ms()
    rss = peak_rss_mb()

    if recognizer is not None:
        for result, audio in zip(results, audios, strict=True):
            hypothesis = recognizer.transcribe(audio, tts.sample_rate)
            result.asr_hypothesis = hypothesis
            language = getattr(tts, "language", None)
            result.wer = wer(result.text, hypothesis, language)
            result.cer = cer(result.text, hypothesis, language)

    synth = [r.synth_ms for r in results]
    latencies = [r.session_first_frame_ms for r in results if r.session_first_frame_ms is not None]
    ttfts = [r.ttft_ms for r in results]
    total_audio = sum(r.audio_s for r in results)
    summary = Summary(
        phrases=len(results),
        cold_start_s=cold_start,
        first_synth_ms=1000 * first_synth,
        ttft_ms_p50=percentile(ttfts, 50),
        ttft_ms_p95=percentile(ttfts, 95),
        synth_ms_p50=percentile(synth, 50),
        synth_ms_p95=percentile(synth, 95),
        agg_rtfx=total_audio / (sum(synth) / 1000) if synth and sum(synth) > 0 else 0.0,
        peak_rss_mb=rss,
        audio_s=total_audio,
        frames=sum(r.frame_count for r in results),
        chunks=sum(r.chunk_count for r in results),
        finished_on_eos=sum(r.finished_on_eos for r in results),
        session_first_frame_ms_p50=percentile(latencies, 50) if latencies else None,
        session_first_frame_ms_p95=percentile(latencies, 95) if latencies else None,
        wer_macro=statistics.fmean(r.wer for r in results) if recognizer and results else None,
        cer_macro=statistics.fmean(r.cer for r in results) if recognizer and results else None,
    )
    return Report(
        summary=summary,
        stages_ms=stages,
        phrases=results,
        asr_backend=recognizer.name if recognizer else None,
        reference=other,
    )


def _phrase(
    tts, i: int, text: str, voice, options: SpeakOptions, session, audio_dir, audios
) -> PhraseResult:
    """One phrase: streamed (time to first audio, synthesis), then through the session."""
    from pocketcli.audio.postprocess import peak_normalize
    from pocketcli.audio.wav import write_wav

    audio, ttft, total, traces = _speak(tts, text, voice, options)
    seconds = len(audio) / tts.sample_rate
    result = PhraseResult(
        index=i,
        text=text,
        ttft_ms=1000 * ttft,
        synth_ms=1000 * total,
        audio_s=seconds,
        rtfx=seconds / total if total > 0 else 0.0,
        frame_count=sum(t.frames for t in traces),
        chunk_count=len(traces),
        finished_on_eos=all(t.finished_on_eos for t in traces),
    )
    if session is not None:
        result.session_first_frame_ms = 1000 * _session_first_frame(session, text)
    if audio_dir is not None:
        audio_dir.mkdir(parents=True, exist_ok=True)
        write_wav(audio_dir / f"phrase_{i:03d}.wav", peak_normalize(audio), tts.sample_rate)
    audios.append(audio)
    return result
