"""Paths checked before any download, build or synthesis.

A command checks every input it will read and every output it will write
first, so a typo costs no model download, and the message names the path the
user typed (never a temporary file). Missing or unreadable inputs and
unwritable outputs are runtime failures (exit 1), one line each.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from pocketcli.errors import PathError as PathError  # defined there; re-exported
from pocketcli.filekind import not_found

if TYPE_CHECKING:
    from pocketcli.cli.model_options import ModelFlags

STDIO = "-"


def readable_file(path: Path | str | None, what: str) -> None:
    """``path`` exists, is a file (or a pipe) and can be read."""
    if path is None or str(path) == STDIO:
        return
    p = Path(path)
    if not p.exists():
        raise PathError(not_found(p, what))
    if p.is_dir():
        raise PathError(f"{what} is a folder, not a file: {path}")
    if not os.access(p, os.R_OK):
        raise PathError(f"{what} is not readable (permission denied): {path}")


def recording(path: Path | str | None) -> None:
    """``path`` is a readable file that is no voice or model file (tensors are
    told from the first bytes): a recording to clone."""
    readable_file(path, "audio file")
    if path is None or str(path) == STDIO:
        return
    from pocketcli.audio.read import check_regular
    from pocketcli.tensorfile import looks_like_safetensors

    check_regular(Path(path))  # a FIFO, device or socket is never opened

    with open(path, "rb") as f:
        head = f.read(64)
    if looks_like_safetensors(head, Path(path).stat().st_size) or head.startswith(
        (b"PTVB1", b"\x93NUMPY")
    ):
        raise PathError(
            f"{path} holds tensors (a voice or model file), not a recording;"
            " a voice file is used with --voice-file"
        )


def voice_file(path: Path | str | None, name: str | None) -> None:
    """``path`` is a readable voice file of a format pockettts reads (from its
    headers: no model needed) and, when it holds voices by name, one of them is
    ``name`` (or it holds only one)."""
    readable_file(path, "voice file")
    if path is None or str(path) == STDIO:
        return
    from pocketcli.voices.formats import identify

    found = identify(path)
    if any(entry.name is not None for entry in found.voices):
        found.pick(name)


def _first_existing(p: Path) -> Path:
    for parent in (p, *p.parents):
        if parent.exists():
            return parent
    return Path(".")


def _not_creatable(folder: Path) -> str | None:
    """Why ``folder`` cannot be written to or created, or None."""
    base = _first_existing(folder.absolute())
    if not base.is_dir():
        return f"{base} is a file, not a folder"
    if not os.access(base, os.W_OK | os.X_OK):
        return f"{base} is not writable"
    return _refused(base)


def _new_file_fits(folder: Path, what: str, path: Path | str) -> None:
    """A new file can be made in ``folder`` (for ``path``, the user's words)."""
    why = f"{folder} is not writable" if not os.access(folder, os.W_OK | os.X_OK) else None
    why = why or _refused(folder)
    if why is not None:
        raise PathError(f"cannot write {what} {path}: {why}")


def _refused(folder: Path) -> str | None:
    """Why a new file cannot be made in ``folder`` (tried: permissions do not tell
    for root, /proc or a read-only mount), or None."""
    from pocketcli.atomic import registered_temporary
    from pocketcli.interrupts import unregister_temporary

    try:  # registered: a stop signal meanwhile removes it too
        probe = registered_temporary(folder, "pockettts-check")
    except OSError as exc:
        return f"{folder} takes no new files ({exc.strerror or exc})"
    os.unlink(probe)
    unregister_temporary(probe)
    return None


def writable_dir(path: Path | str | None, what: str) -> None:
    """``path`` is a writable folder, or one that can be created."""
    if path is None:
        return
    why = _not_creatable(Path(path))
    if why is not None:
        action = "write to" if Path(path).is_dir() else "create"
        raise PathError(f"cannot {action} {what} {path}: {why}")


def writable_file(path: Path | str | None, what: str, *, create_folders: bool = False) -> None:
    """``path`` can be written: an existing writable file, or a new file in a folder that
    exists (or, with ``create_folders``, can be created) and takes new files. ``-``
    (stdout) is fine, unless the process was started with stdout closed."""
    if path is None:
        return
    if str(path) == STDIO:
        from pocketcli.cli.stdio import was_closed

        if was_closed("stdout"):
            raise PathError(f"cannot write {what} '-': standard output is closed")
        return
    p = Path(path)
    if not p.is_absolute():
        try:
            os.getcwd()
        except FileNotFoundError:
            raise PathError(
                f"cannot write {what} {path}: the current folder no longer exists"
                " (it was deleted); cd to a folder or give an absolute path"
            ) from None
    if p.is_dir():
        raise PathError(f"{what} is a folder, not a file: {path}")
    if p.exists():
        from pocketcli.atomic import output_kind

        if not os.access(p, os.W_OK):
            raise PathError(f"cannot write {what} {path}: permission denied")
        kind = output_kind(p)  # refuses sockets and block devices
        folder = Path(os.path.realpath(p)).parent
        if kind == "file":  # the new file is written beside the old one, then renamed
            _new_file_fits(folder, what, path)
        return
    parent = p.absolute().parent
    if parent.is_dir():
        _new_file_fits(parent, what, path)
        return
    why = _not_creatable(parent)
    if why is not None:
        raise PathError(f"cannot write {what} {path}: {why}")
    if not create_folders:
        raise PathError(f"cannot write {what} {path}: its folder does not exist ({parent})")


def same_file(a: Path | str, b: Path | str) -> bool:
    """``a`` and ``b`` name one file (through links, ``..`` or another spelling), whether
    or not it exists yet; ``-`` (standard input or output) and devices never count."""
    if STDIO in (str(a), str(b)):
        return False
    try:
        if os.path.exists(a) and os.path.exists(b):
            import stat

            return os.path.samefile(a, b) and stat.S_ISREG(os.stat(a).st_mode)
    except OSError:
        return False
    return os.path.realpath(a) == os.path.realpath(b)


def _inside(path: Path | str, folder: Path | str) -> bool:
    """``path`` names a file that is already in ``folder`` (at any depth, through links)."""
    try:
        real, base = os.path.realpath(path), os.path.realpath(folder)
        return os.path.isfile(real) and os.path.commonpath([real, base]) == base
    except (OSError, ValueError):
        return False


def folder_keeps_inputs(folder: Path | str, inputs: list[tuple[str, Path | str | None]]) -> None:
    """A folder an output would replace (``--force`` or not) may not hold one of the run's
    inputs: replacing it would delete what the run reads. A usage error naming the input."""
    if not os.path.isdir(folder):
        return
    for what, path in inputs:
        if path is not None and "://" not in str(path) and _inside(path, folder):
            from pocketcli.cli.clickcompat import UsageError

            raise UsageError(
                f"cannot write {folder}: it holds {path}, the {what} of this run, which"
                " replacing the folder would delete; choose another folder"
            )


def _clashes(path: Path | str, other: Path | str) -> bool:
    """Writing ``path`` would replace ``other``, a file or a file of the folder ``other``."""
    if STDIO in (str(path), str(other)) or "://" in str(other):
        return False
    return _inside(path, other) if os.path.isdir(other) else same_file(path, other)


def first_clash(
    outputs: list[tuple[str, Path | str | None]], inputs: list[tuple[str, Path | str | None]]
) -> str | None:
    """Why the first output that is also an input (a file, or a file of an input folder
    such as ``--model-dir``) or another output's file may not be written: it would
    replace what the run reads, or another output. ``None`` when none is."""
    given_outputs = [(flag, p) for flag, p in outputs if p is not None]
    others = given_outputs + [(flag, p) for flag, p in inputs if p is not None]
    for i, (flag, path) in enumerate(given_outputs):
        for other_flag, other in others[i + 1 :]:
            if _clashes(path, other):
                folder = os.path.isdir(other)
                what, kind = ("a file of the", "folder") if folder else ("also the", "file")
                return (
                    f"{flag} {path} is {what} {other_flag} {kind}: writing it would replace"
                    " that; name another file"
                )
    return None


def model_inputs(model: ModelFlags | None) -> list[tuple[str, Path | str | None]]:
    """The model's files a command's outputs may not replace, for ``first_clash``: every
    file of the ``--model-dir`` folder and the ``--config`` file."""
    if model is None:
        return []
    return [("--model-dir", model.model_dir), ("--config", model.config)]
