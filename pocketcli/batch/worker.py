"""A worker: a model loaded once, making one line at a time into the bytes of a WAV file.

The same class runs inside the driver (one process), in each ``--jobs``
process and in each Ray actor, so every mode makes the same bytes for a line.
Workers never write files: they hand the WAV bytes back and the driver writes
file and manifest, so every mode reports and skips lines the same way.
"""

from __future__ import annotations

import io
import os
import socket
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from pocketcli.batch.plan import Job
from pocketcli.options import SpeakOptions
from pocketcli.runtimes.registry import ModelRequest


@dataclass(frozen=True)
class ModelSpec:
    """How a worker opens the model: the driver's request, on the pack the driver used
    when this node has it (else the store resolves the request on this node)."""

    request: ModelRequest
    pack_dir: str | None
    language: str  # the driver's text language (number reading, markup)
    threads: int | None  # ONNX intra-op threads per session (None: the runtime's default)

    def load(self):
        from pocketcli.api import PocketTTS

        request = replace(self.request, threads=self.threads, progress=False)
        if self.pack_dir is not None and Path(self.pack_dir).is_dir():
            request = replace(request, model_dir=Path(self.pack_dir), language=None, config=None)
        tts = PocketTTS.from_request(request)
        tts.language = self.language
        return tts


@dataclass
class LineResult:
    """A made line (``wav`` set) or a failed one (``error`` set)."""

    job: Job
    wav: bytes | None = None
    error: str | None = None
    duration: float = 0.0
    frames: int = 0
    chunks: int = 0
    seconds: float = 0.0
    worker: str = ""
    warnings: list[str] = field(default_factory=list)


def describe_error(exc: BaseException) -> str:
    """The reason in one line: messages of our own errors as they are, others named."""
    from pocketcli.errors import UserError

    if isinstance(exc, MemoryError):
        return "out of memory"
    if isinstance(exc, OSError):
        where = f": {exc.filename}" if exc.filename else ""
        return f"{exc.strerror or exc}{where}"
    if isinstance(exc, UserError | ValueError) and str(exc):
        return str(exc)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def worker_name() -> str:
    return f"{os.getpid()}@{socket.gethostname()}"


def wav_bytes(audio: np.ndarray, sample_rate: int) -> bytes:
    """The exact bytes ``write_wav`` would put in a file."""
    import soundfile as sf

    from pocketcli.audio.wav import to_pcm16

    buffer = io.BytesIO()
    sf.write(buffer, to_pcm16(audio), sample_rate, subtype="PCM_16", format="WAV")
    return buffer.getvalue()


class LineWorker:
    """Holds the model and the voice; ``make`` never raises for a bad line."""

    def __init__(self, tts, voice, options: SpeakOptions) -> None:
        self.tts = tts
        self.voice = voice
        self.options = options
        self.name = worker_name()

    @classmethod
    def load(cls, spec: ModelSpec, voice, options: SpeakOptions) -> LineWorker:
        return cls(spec.load(), voice, options)

    def make(self, job: Job) -> LineResult:
        result = LineResult(job, worker=self.name)
        traces: list = []
        started = time.perf_counter()
        try:
            audio = self.tts.synthesize(
                job.text,
                self.voice,
                self.options,
                seed=job.seed,
                on_warning=result.warnings.append,
                on_chunk=traces.append,
            )
            result.wav = wav_bytes(audio, self.tts.sample_rate)
            result.duration = audio.size / self.tts.sample_rate
        except Exception as exc:  # one line's failure, whatever it is, never stops the rest
            result.error = describe_error(exc)
        result.seconds = time.perf_counter() - started
        if result.wav is not None:
            result.frames = sum(trace.frames for trace in traces)
            result.chunks = len(traces)
        return result
