"""The batch driver: decides what to make, hands lines to workers, writes files and manifest.

Whatever makes the lines (this process, ``--jobs N`` processes, Ray actors),
the driver alone writes: each WAV atomically (fsynced, then renamed), then its
manifest record (appended, fsynced). So output names, skipping, per-line
errors, the summary and the exit status are the same in every mode.
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, as_completed, wait
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from pocketcli.batch.manifest import MANIFEST_NAME, Manifest, ManifestWriteError
from pocketcli.batch.parse import BatchItem, is_plain_name
from pocketcli.batch.plan import BatchSettings, Job, make_job
from pocketcli.batch.progress import BatchProgress
from pocketcli.batch.worker import LineResult, LineWorker
from pocketcli.errors import UserError


class Executor(Protocol):
    """Makes jobs somewhere; yields each result once, in any order."""

    def run(self, jobs: Iterator[Job]) -> Iterator[LineResult]: ...

    def close(self) -> None: ...


class InProcess:
    """The one-process batch: the driver's own model makes every line.

    ``streams`` > 1: that many lines in flight at once, each a stream of the model's
    scheduler (rows of one batched call per frame), each read by its own thread;
    results come back as lines finish. Same bytes per line as one at a time (int8
    and int4 bit for bit; fp32 to float rounding, far below one 16-bit step).
    """

    def __init__(self, worker: LineWorker, streams: int = 1) -> None:
        self.worker = worker
        self.streams = streams
        self._pool: ThreadPoolExecutor | None = None

    def run(self, jobs: Iterator[Job]) -> Iterator[LineResult]:
        if self.streams <= 1:
            for job in jobs:
                yield self.worker.make(job)
            return
        self._pool = pool = ThreadPoolExecutor(self.streams, thread_name_prefix="line")
        running: set[Future[LineResult]] = set()
        for job in jobs:
            running.add(pool.submit(self.worker.make, job))
            if len(running) >= self.streams:
                done, running = wait(running, return_when=FIRST_COMPLETED)
                yield from (f.result() for f in done)
        for future in as_completed(running):
            yield future.result()
        self.close()

    def close(self) -> None:
        """Also when the run stopped early (the manifest cannot be written): the lines in
        flight end (queued ones are dropped) before the caller cleans up temporary files."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)


def _existing_regular(target: Path) -> os.stat_result | None:
    """What is at ``target`` (None: nothing); refuses what is not a regular file."""
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(st.st_mode):
        kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise UserError(f"cannot write {target}: it exists and is {kind}")
    return st


def _write_wav_bytes(target: Path, data: bytes) -> tuple[os.stat_result, str]:
    from pocketcli.atomic import atomic_path

    _existing_regular(target)
    with atomic_path(target) as tmp, open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    return os.stat(target), hashlib.sha256(data).hexdigest()


def _publish_part(target: Path, part: Path) -> tuple[os.stat_result, str]:
    """Renames a worker's finished ``.part`` file (same folder) to ``target``,
    fsynced first; its sha256 is read block by block (memory stays bounded)."""
    existing = _existing_regular(target)
    digest = hashlib.sha256()
    with open(part, "rb+") as f:
        while block := f.read(1 << 20):
            digest.update(block)
        os.fsync(f.fileno())
    if existing is not None:
        os.chmod(part, stat.S_IMODE(existing.st_mode))
    os.replace(part, target)
    return os.stat(target), digest.hexdigest()


def _write_beside(job: Job, result: LineResult, output_dir: Path) -> None:
    """The line's words and captions beside its WAV (before it: a line is done once its
    WAV and record are), each as the WAV is written: whole, fsynced, then renamed."""
    from pocketcli.words.captions import captions, words_json

    for kind in job.beside:
        body = words_json(result.words) if kind == "json" else captions(result.words, kind)
        _write_wav_bytes(output_dir / f"{job.name}.{kind}", body.encode("utf-8"))


def _beside_present(job: Job, output_dir: Path) -> bool:
    """Whether what goes beside the line's WAV is there (asked for since, or removed:
    the line is made again)."""
    return all((output_dir / name).is_file() for name in job.side_files.values())


def _clean_parts(output_dir: Path) -> None:
    """Drops what killed or stopped workers left (we hold the manifest's lock)."""
    for stale in output_dir.glob(".*.wav.*.part"):
        stale.unlink(missing_ok=True)


def _record(job: Job, result: LineResult, settings: BatchSettings) -> dict:
    return {
        "id": job.name,
        "line": job.line,
        "file": job.file,
        "status": "failed" if result.error else "done",
        "error": result.error,
        "text": job.text,
        "language": settings.language,
        "voice": settings.voice_name,
        "seed": job.seed,
        "duration": round(result.duration, 6),
        "frames": result.frames,
        "chunks": result.chunks,
        "seconds": round(result.seconds, 6),
        "key": job.key,
        "worker": result.worker,
        "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
    }


def _refused(item: BatchItem, settings: BatchSettings) -> dict:
    """The record of a line refused for its text (no id: it may lack one, or repeat one)."""
    return {
        "id": None,
        "line": item.line_number,
        "file": None,
        "status": "failed",
        "error": item.error,
        "text": item.text,
        "language": settings.language,
        "voice": settings.voice_name,
        "seed": None,
        "duration": 0.0,
        "frames": 0,
        "chunks": 0,
        "seconds": 0.0,
        "key": None,
        "worker": "",
        "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
    }


class BatchReport:
    """Counts and messages of one run."""

    def __init__(self) -> None:
        self.written = 0
        self.skipped = 0
        self.failed = 0  # lines refused for their text included
        self.refused = 0
        self.audio = 0.0

    def summary(self, wall: float) -> str:
        refused = f" ({self.refused} refused for their text)" if self.refused else ""
        return (
            f"batch: {self.written} written, {self.skipped} already done, "
            f"{self.failed} failed{refused}; {self.audio / 3600:.3f} h of audio in {wall:.1f} s"
        )

    def exit_status(self, accept_refused: bool = False) -> int:
        """0 when every line is made (or, ``accept_refused``, every line but those refused
        for their text: they can never be made as they are); 1 otherwise."""
        return 1 if self.failed - (self.refused if accept_refused else 0) else 0


def run_batch(
    items: list[BatchItem],
    settings: BatchSettings,
    output_dir: Path,
    start: Callable[[int, Callable[[str], None]], Executor],
    *,
    overwrite: bool = False,
    quiet: bool = False,
) -> BatchReport:
    """Makes every line not already done; ``start(n, note)`` gives the executor for n lines
    (``note`` prints a message without breaking the progress bar). A manifest that cannot
    be written (a full disk) stops the run: the summary of what was done, then its error."""
    try:
        output_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot create {output_dir}: {exc.strerror or exc}") from None
    report = BatchReport()
    started = time.perf_counter()
    with Manifest(output_dir / MANIFEST_NAME) as manifest:
        try:
            _run(items, settings, output_dir, start, manifest, report, overwrite, quiet)
        except ManifestWriteError:
            sys.stderr.write(report.summary(time.perf_counter() - started) + "; stopped\n")
            raise
    if report.failed or not quiet:
        sys.stderr.write(report.summary(time.perf_counter() - started) + "\n")
    return report


def _run(
    items: list[BatchItem],
    settings: BatchSettings,
    output_dir: Path,
    start: Callable[[int, Callable[[str], None]], Executor],
    manifest: Manifest,
    report: BatchReport,
    overwrite: bool,
    quiet: bool,
) -> None:
    _clean_parts(output_dir)
    if manifest.unreadable and not quiet:
        sys.stderr.write(
            f"pockettts: warning: {manifest.path}: {manifest.unreadable} unreadable "
            "record(s) ignored\n"
        )
    todo: list[Job] = []
    refused: list[BatchItem] = []
    for item in items:
        if item.error is not None:
            refused.append(item)
            continue
        job = replace(make_job(item, settings), spool=str(output_dir))
        target = output_dir / job.file
        if (
            not overwrite
            and manifest.is_done(job.name, job.key, target)
            and _beside_present(job, output_dir)
        ):
            report.skipped += 1
        else:
            todo.append(job)
    with BatchProgress(len(todo) + len(refused), quiet=quiet) as progress:
        for item in refused:  # never made: counted (and shown) at once
            progress.note(f"pockettts: line {item.line_number}: {item.error}")
            manifest.append(_refused(item, settings))
            report.failed += 1
            report.refused += 1
            progress.line_done(0.0, made=False)
        if todo:
            executor = start(len(todo), progress.note)
            try:
                results = executor.run(iter(todo))
                _collect(results, settings, output_dir, manifest, report, progress, quiet)
            finally:
                executor.close()
                _clean_parts(output_dir)


def _collect(
    results: Iterable[LineResult],
    settings: BatchSettings,
    output_dir: Path,
    manifest: Manifest,
    report: BatchReport,
    progress: BatchProgress,
    quiet: bool,
) -> None:
    seen: set[str] = set()
    for result in results:
        job = result.job
        if job.name in seen:  # never twice in the manifest, whatever an executor does
            if result.path is not None:
                Path(result.path).unlink(missing_ok=True)
            continue
        seen.add(job.name)
        where = f"line {job.line}" + ("" if is_plain_name(job.name) else f" ({job.name})")
        if not quiet:
            for warning in result.warnings:
                progress.note(f"pockettts: warning: {where}: {warning}")
        record = _record(job, result, settings)
        if result.wav is not None or result.path is not None:
            target = output_dir / job.file
            try:
                _write_beside(job, result, output_dir)
                if result.path is not None:
                    st, sha256 = _publish_part(target, Path(result.path))
                else:
                    assert result.wav is not None
                    st, sha256 = _write_wav_bytes(target, result.wav)
            except UserError as exc:
                result.error = str(exc)
            except OSError as exc:
                result.error = f"cannot write {exc.filename or target}: {exc.strerror or exc}"
            else:
                record.update(bytes=st.st_size, mtime_ns=st.st_mtime_ns, sha256=sha256)
                record.update(job.side_files)
            finally:
                if result.path is not None:
                    Path(result.path).unlink(missing_ok=True)
        if result.error is not None:
            record.update(status="failed", error=result.error)
            progress.note(f"pockettts: {where}: {result.error}")
        manifest.append(record)  # counted once recorded: what a re-run will find
        if result.error is not None:
            report.failed += 1
            report.refused += int(result.refused)
        else:
            report.written += 1
            report.audio += result.duration
        progress.line_done(result.duration if result.error is None else 0.0)
