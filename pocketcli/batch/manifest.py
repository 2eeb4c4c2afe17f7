"""The batch manifest: ``manifest.jsonl`` next to the outputs, one JSON object per line made.

Each record is appended, flushed and fsynced as soon as its WAV is in place, so
a killed run loses at most the lines in flight. Fields (schema
``pockettts-batch/1``):

    id, line, file, status ("done" or "failed"), error (null when done), text,
    language, voice, seed, duration (s of audio), frames, chunks, seconds
    (spent making it), key (sha256 of text + settings), bytes, mtime_ns and
    sha256 (of the WAV), worker (pid@host), time (UTC, ISO 8601)

A line is "done" only if its last record says done with the same key AND
``file`` is a regular file of that size whose modification time, or else
sha256, matches. A re-run appends records for what it makes; the last record
of an id wins. A torn last line (a run killed mid-write) is cut off when the
manifest is opened again; other unreadable lines are ignored and counted.
Two runs cannot write one manifest at once (it is locked while in use).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from pocketcli.errors import UserError

MANIFEST_NAME = "manifest.jsonl"
SCHEMA = "pockettts-batch/1"

try:  # POSIX; elsewhere two runs on one folder are not prevented
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


@dataclass(frozen=True)
class Finished:
    """What the manifest says about a finished file."""

    key: str
    bytes: int
    mtime_ns: int
    sha256: str


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _finished(record: object) -> tuple[str, Finished | None] | None:
    """(id, what is finished or None for a failed line), or None for an unreadable record."""
    if not isinstance(record, dict):
        return None
    if record.get("id") is None and record.get("status") == "failed":
        return "", None  # a line refused for its text: nothing of it was ever done
    if not isinstance(record.get("id"), str):
        return None
    if record.get("status") == "failed":
        return record["id"], None
    fields = (record.get("key"), record.get("bytes"), record.get("mtime_ns"), record.get("sha256"))
    if record.get("status") != "done" or not (
        isinstance(fields[0], str)
        and isinstance(fields[1], int)
        and isinstance(fields[2], int)
        and isinstance(fields[3], str)
    ):
        return None
    return record["id"], Finished(*fields)


class Manifest:
    """An open, locked manifest: what is finished, and appending new records."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.finished: dict[str, Finished] = {}
        self.unreadable = 0  # records ignored (not JSON, or missing fields)
        self.torn = False  # a partial last line was cut off
        try:
            self._file = open(path, "a+b")  # noqa: SIM115 - kept open for the whole run
        except OSError as exc:
            raise UserError(f"cannot open the manifest {path}: {exc.strerror or exc}") from None
        try:
            self._lock()
            if not stat.S_ISREG(os.fstat(self._file.fileno()).st_mode):
                raise UserError(f"the manifest {path} is not a regular file")
            self._read()
        except BaseException:
            self._file.close()
            raise

    def _lock(self) -> None:
        if fcntl is None:
            return
        try:
            fcntl.flock(self._file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UserError(
                f"another pockettts batch is writing to {self.path.parent} "
                f"({self.path.name} is locked)"
            ) from None

    def _read(self) -> None:
        self._file.seek(0)
        data = self._file.read()
        end = data.rfind(b"\n") + 1
        if end < len(data):  # killed in the middle of a record: that line was in flight
            self.torn = True
            self._file.truncate(end)
            data = data[:end]
        for raw in data.splitlines():
            if not raw.strip():
                continue
            try:
                parsed = _finished(json.loads(raw))
            except (ValueError, RecursionError):
                parsed = None
            if parsed is None:
                self.unreadable += 1
                continue
            name, entry = parsed
            if entry is None:
                self.finished.pop(name, None)
            else:
                self.finished[name] = entry

    def is_done(self, name: str, key: str, target: Path) -> bool:
        """Recorded as made with this key, and the file is still the one recorded."""
        entry = self.finished.get(name)
        if entry is None or entry.key != key:
            return False
        try:
            st = os.lstat(target)
        except OSError:
            return False
        if not stat.S_ISREG(st.st_mode) or st.st_size != entry.bytes:
            return False
        if st.st_mtime_ns == entry.mtime_ns:
            return True
        try:  # copied or touched: compare the contents
            return file_sha256(target) == entry.sha256
        except OSError:
            return False

    def append(self, record: dict) -> None:
        """One record, on disk before this returns."""
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
        self._file.write(line.encode("utf-8"))
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> Manifest:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
