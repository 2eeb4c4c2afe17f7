"""A worker: a model loaded once, making one line at a time into a WAV file.

The same class runs inside the driver (one process), in each ``--jobs``
process and in each Ray actor, so every mode makes the same bytes for a line.
A line's frames are streamed through the library's file writer
(``PocketTTS.synthesize_to_file``) into a hidden ``.part`` file, so memory does not grow
with the line's length (issue 12). The worker hands back that file's path
(``--jobs`` and one process: it is in the output folder) or, for a Ray actor
that may sit on another node, its bytes; the driver alone publishes the file
under its name and writes the manifest, so every mode reports and skips lines
the same way.
"""

from __future__ import annotations

import os
import socket
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from pocketcli.batch.plan import Job
from pocketcli.options import ModelRequest, SpeakOptions


@dataclass(frozen=True)
class ModelSpec:
    """How a worker opens the model: the driver's request, on the pack the driver used
    when this node has it (else the store resolves the request on this node)."""

    request: ModelRequest
    pack_dir: str | None
    language: str  # the driver's text language (number reading, markup)
    threads: int | None  # ONNX intra-op threads per session (None: the runtime's default)

    def load(self):
        from pocketcli.api import open_request

        request = replace(self.request, threads=self.threads, progress=False)
        if self.pack_dir is not None and Path(self.pack_dir).is_dir():
            request = replace(request, model_dir=Path(self.pack_dir), language=None, config=None)
        tts = open_request(request)
        tts.language = self.language
        return tts


@dataclass
class LineResult:
    """A made line (``wav`` set) or a failed one (``error`` set)."""

    job: Job
    wav: bytes | None = None  # the WAV's bytes (from a Ray actor)...
    path: str | None = None  # ... or the finished WAV file the worker streamed (same machine)
    error: str | None = None
    duration: float = 0.0
    frames: int = 0
    chunks: int = 0
    seconds: float = 0.0
    worker: str = ""
    warnings: list[str] = field(default_factory=list)
    refused: bool = False  # failed for its text (nothing to say, bad markup): never makeable
    words: tuple = ()  # its timed words (``pocketcli.words.Word``), when the options ask


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


def refused_for_text(exc: BaseException) -> bool:
    """Whether a line failed for its text alone (nothing left to say, malformed markup):
    the same text fails on every run, so ``--accept-refused`` lets it pass."""
    from pocketcli.errors import EmptyTextError, MarkupError

    return isinstance(exc, EmptyTextError | MarkupError)


def worker_name() -> str:
    return f"{os.getpid()}@{socket.gethostname()}"


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

    def make(self, job: Job, folder: Path | None = None) -> LineResult:
        """Streams the line into a ``.part`` file in ``folder`` (default: ``job.spool``),
        a stream of the model's scheduler (beside other lines, with ``--streams``)."""
        result = LineResult(job, worker=self.name)
        traces: list = []
        started = time.perf_counter()
        if folder is None:
            folder = Path(job.spool) if job.spool is not None else Path(tempfile.gettempdir())
        # Matches the runner's clean-up of what a killed run leaves (".*.wav.*.part").
        part = folder / f".line{job.line}.wav.{os.getpid()}.part"
        try:
            result.duration = self._speak(job, part, result, traces)
            result.path = str(part)
        except Exception as exc:  # one line's failure, whatever it is, never stops the rest
            part.unlink(missing_ok=True)
            # Errors name the user's file, never the hidden temporary one.
            shown = Path(job.spool, job.file) if job.spool is not None else Path(job.file)
            result.error = describe_error(exc).replace(str(part), str(shown))
            result.refused = refused_for_text(exc)
        result.seconds = time.perf_counter() - started
        if result.path is not None:
            result.frames = sum(trace.frames for trace in traces)
            result.chunks = len(traces)
        return result

    def _speak(self, job: Job, part: Path, result: LineResult, traces: list) -> float:
        """The line's WAV into ``part`` (its words into ``result.words`` when asked)."""
        options = self.options.with_(seed=job.seed)
        if not options.words:
            return self.tts.synthesize_to_file(
                job.text,
                part,
                self.voice,
                options,
                format="wav",
                on_warning=result.warnings.append,
                on_chunk=traces.append,
            )
        from pocketcli.words.files import speak_to_file

        seconds, words = speak_to_file(
            self.tts,
            job.text,
            part,
            self.voice,
            options,
            "wav",
            on_warning=result.warnings.append,
            on_chunk=traces.append,
        )
        result.words = tuple(words)
        return seconds

    def make_bytes(self, job: Job) -> LineResult:
        """``make`` in this node's temporary folder, the file handed back as bytes
        (a Ray actor: the driver may be on another machine)."""
        result = self.make(job, Path(tempfile.gettempdir()))
        if result.path is not None:
            part, result.path = Path(result.path), None
            try:
                result.wav = part.read_bytes()
            finally:
                part.unlink(missing_ok=True)
        return result
