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
manifest is opened again; other unreadable lines, and lines longer than
``MAX_RECORD_BYTES``, are ignored and counted. The file is read line by line
(memory stays bounded whatever it holds), never followed if it is a symbolic
link, and written unbuffered: a record is on disk when ``append`` returns, and a
write that fails (a full disk) is undone, raised as ``ManifestWriteError`` and
never raised again when the manifest is closed. Two runs cannot write one
manifest at once (it is locked while in use).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from pocketcli.errors import FieldHint, UserError
from pocketcli.errors import ManifestWriteError as ManifestWriteError  # defined there; re-exported

MANIFEST_NAME = "manifest.jsonl"
SCHEMA = "pockettts-batch/1"
# The longest record read back. A record holds its line's text, which the batch file's
# line limit (``parse.MAX_LINE_BYTES``) bounds: even escaped to \\uXXXX it fits.
MAX_RECORD_BYTES = 2 << 20

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
        self.unreadable = 0  # records ignored (not JSON, missing fields, too long)
        self.torn = False  # a partial last line was cut off
        flags = os.O_RDWR | os.O_CREAT | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
        try:
            self._fd: int | None = os.open(path, flags | getattr(os, "O_NOFOLLOW", 0), 0o644)
        except OSError as exc:
            if os.path.islink(path):  # ELOOP: a link may point anywhere, even outside
                raise FieldHint(
                    f"the manifest {path} is a symbolic link; it is never followed "
                    "(remove it, or give the folder it is in as {output_dir})",
                    "output_dir",
                ) from None
            raise UserError(f"cannot open the manifest {path}: {exc.strerror or exc}") from None
        try:
            self._lock()
            if not stat.S_ISREG(os.fstat(self._fd).st_mode):
                raise UserError(f"the manifest {path} is not a regular file")
            self._read()
        except BaseException:
            self.close()
            raise

    def _lock(self) -> None:
        if fcntl is None:
            return
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UserError(
                f"another pockettts batch is writing to {self.path.parent} "
                f"({self.path.name} is locked)"
            ) from None

    def _read(self) -> None:
        try:
            self._read_records()
        except OSError as exc:
            reason = exc.strerror or exc
            raise UserError(f"cannot read the manifest {self.path}: {reason}") from None

    def _read_records(self) -> None:
        os.lseek(self._fd, 0, os.SEEK_SET)
        with open(self._fd, "rb", closefd=False) as f:
            while True:
                start = f.tell()
                raw = f.readline(MAX_RECORD_BYTES + 1)
                if not raw:
                    return
                too_long = len(raw) > MAX_RECORD_BYTES
                while too_long and not raw.endswith(b"\n"):  # skip to its end, unkept
                    if not (raw := f.readline(MAX_RECORD_BYTES)):
                        break
                if not raw.endswith(b"\n"):  # the end: killed in the middle of a record
                    self.torn = True
                    os.ftruncate(self._fd, start)
                    return
                if too_long:
                    self.unreadable += 1
                else:
                    self._take(raw)

    def _take(self, raw: bytes) -> None:
        if not raw.strip():
            return
        try:
            parsed = _finished(json.loads(raw))
        except (ValueError, RecursionError):
            parsed = None
        if parsed is None:
            self.unreadable += 1
            return
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
        """One record, on disk (fsynced) before this returns; ``ManifestWriteError`` if not,
        with the manifest left as it was."""
        assert self._fd is not None, "the manifest is closed"
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
        data = memoryview(line.encode("utf-8"))
        size = os.fstat(self._fd).st_size
        try:
            while data:
                data = data[os.write(self._fd, data) :]
            os.fsync(self._fd)
        except OSError as exc:
            with contextlib.suppress(OSError):  # no torn record behind us
                os.ftruncate(self._fd, size)
            raise ManifestWriteError(
                f"cannot write the manifest {self.path}: {exc.strerror or exc}"
            ) from None

    def close(self) -> None:
        """Releases the lock; never raises (every record was fsynced when appended)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            with contextlib.suppress(OSError):
                os.close(fd)

    def __enter__(self) -> Manifest:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
