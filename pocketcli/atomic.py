"""Writing files so that a reader never sees a partial one.

Every output (WAV, voice file, pack manifest) goes to a temporary name in the
destination folder and is renamed into place only when complete: an error,
Ctrl-C or a full disk leaves either the old file or nothing.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pocketcli.interrupts import raise_if_stopped


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _current_umask()
FILE_MODE = 0o666 & ~_UMASK
DIR_MODE = 0o777 & ~_UMASK


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yields a temporary path beside ``path``; renames it onto ``path`` on success."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        raise_if_stopped()  # never publish an output after Ctrl-C or SIGTERM
        os.chmod(tmp, FILE_MODE)  # mkstemp makes it private; give it the usual permissions
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
