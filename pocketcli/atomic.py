"""Writing files so that a reader never sees a partial one, and nothing is clobbered.

Every writer in pockettts (audio, voice files, metrics, manifests, downloads)
goes through ``atomic_path``. What it does depends on what is at the path:

- nothing, or a regular file: the data goes to a temporary name in the same
  folder and is renamed into place only when complete, so an error, Ctrl-C or
  a full disk leaves either the old file or nothing. A file that was there
  keeps its permission bits and, where the user may set them, its owner and
  group. A symbolic link is followed: its target is replaced, the link stays.
- a character device or a FIFO (``/dev/null``, ``/dev/stdout``, a named
  pipe): it is written into, never replaced. The data is staged in the system's
  temporary folder and copied in once complete, so a reader of the pipe still
  never sees a partial file.
- a socket, a block device or a directory: refused with one line.

OS errors while writing become a ``UserError`` naming the user's path and the
cause in words ("the disk is full"), never a temporary file's name.

Folders (exports, packs) go through ``atomic_folder``: built beside their place and
renamed there, replacing only an empty folder or one the writer made itself
(``FolderKind``: its marker file, and nothing else in it), or any folder with ``force``;
never a file, a link or a special file (``check_folder_output``).
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
import stat
import tempfile
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from pocketcli.errors import OutputRefused, UserError
from pocketcli.filekind import describe_mode
from pocketcli.interrupts import (
    raise_if_stopped,
    register_temporary,
    unregister_temporary,
)


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _current_umask()
FILE_MODE = 0o666 & ~_UMASK
DIR_MODE = 0o777 & ~_UMASK

_REASONS = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is exceeded",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.EROFS: "the file system is read-only",
    errno.EISDIR: "it is a directory",
    errno.ENOTDIR: "a folder on the way is a file",
    errno.ENOENT: "its folder does not exist",
    errno.EFBIG: "the file is too large for this file system",
    errno.ENAMETOOLONG: "the name is too long",
    errno.EIO: "input/output error (a failing disk?)",
}


def os_reason(exc: OSError) -> str:
    """The cause of an OS error in plain words."""
    if exc.errno in _REASONS:
        return _REASONS[exc.errno]
    return (exc.strerror or str(exc)).lower()


def creation_reason(folder: str | Path, exc: OSError) -> str:
    """Why no file can be created in ``folder``, which may well exist (/proc, /sys)."""
    if exc.errno == errno.ENOENT and os.path.isdir(folder):
        return f"{folder} takes no new files (a virtual file system?)"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return f"{folder} is not writable"
    return os_reason(exc)


def write_error(path: str | Path, exc: OSError) -> UserError:
    return UserError(f"cannot write {path}: {os_reason(exc)}")


def _disk_full(folder: Path) -> bool:
    """Whether the file system holding ``folder`` has no free blocks left."""
    try:
        return os.statvfs(folder).f_bavail == 0
    except OSError:
        return False


def output_kind(path: str | Path) -> str:
    """``"file"`` (missing or regular: replaced atomically) or ``"stream"`` (a
    character device or FIFO: written into). Raises ``UserError`` for anything else."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "file"
    except OSError as exc:
        raise write_error(path, exc) from None
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return "stream"
    raise UserError(f"cannot write {path}: it is {describe_mode(mode)}")


def _keep_owner_and_mode(tmp: str, existing: os.stat_result | None) -> None:
    if existing is None:
        os.chmod(tmp, FILE_MODE)  # mkstemp makes it private; give it the usual permissions
        return
    os.chmod(tmp, stat.S_IMODE(existing.st_mode))
    if (existing.st_uid, existing.st_gid) != (os.geteuid(), os.getegid()):
        for uid, gid in ((existing.st_uid, existing.st_gid), (-1, existing.st_gid)):
            try:
                os.chown(tmp, uid, gid)
                break
            except OSError:
                continue
        # chown can drop set-id bits: set the mode again.
        with suppress(OSError):
            os.chmod(tmp, stat.S_IMODE(existing.st_mode))


def _copy_into(tmp: str, target: str) -> None:
    """Writes the staged file into a device or FIFO (opened without O_CREAT)."""
    fd = os.open(target, os.O_WRONLY | getattr(os, "O_CLOEXEC", 0))
    with open(fd, "wb") as out, open(tmp, "rb") as src:
        shutil.copyfileobj(src, out, 1 << 20)


def registered_temporary(folder: Path, name: str) -> str:
    """Creates ``folder/.name.XXXXXXXX.part`` (private, new) with its name registered for
    removal before the file exists: a stop signal landing anywhere in between, whichever
    thread the kernel gave it to, finds it registered (``hard_exit`` removes it)."""
    for _ in range(100):
        tmp = os.path.join(folder, f".{name}.{secrets.token_hex(4)}.part")
        register_temporary(tmp)
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_BINARY, 0o600)
        except FileExistsError:
            unregister_temporary(tmp)
            continue
        except OSError:  # not created
            unregister_temporary(tmp)
            raise
        except BaseException:  # a stop's exception, maybe once the file existed
            with suppress(OSError):
                os.unlink(tmp)
            unregister_temporary(tmp)
            raise
        os.close(fd)
        return tmp
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(folder))


_O_BINARY = getattr(os, "O_BINARY", 0)  # Windows: no newline translation


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yields a temporary path for the caller to write; on success the data
    lands at ``path`` (see the module docstring). On any exception the
    temporary file is removed and nothing at ``path`` changes."""
    shown = Path(path)
    kind = output_kind(path)  # stat follows links: /dev/stdout is the pipe or terminal
    # A regular file is replaced where it really is (a link stays a link); a device
    # or FIFO is opened by the name given (/dev/stdout resolves to "pipe:[...]").
    target = os.path.realpath(path) if kind == "file" else os.fspath(path)
    folder = Path(target).parent if kind == "file" else Path(tempfile.gettempdir())
    try:
        tmp = registered_temporary(folder, shown.name)
    except OSError as exc:
        raise UserError(f"cannot write {shown}: {creation_reason(folder, exc)}") from None
    try:
        yield Path(tmp)
        raise_if_stopped()  # never publish an output after Ctrl-C or SIGTERM
        if kind == "stream":
            _copy_into(tmp, target)
        else:
            try:
                existing = os.stat(target)
            except FileNotFoundError:
                existing = None
            if existing is not None and not stat.S_ISREG(existing.st_mode):
                # It changed under us (into a FIFO, a folder, ...): never replaced.
                raise UserError(
                    f"cannot write {shown}: it became {describe_mode(existing.st_mode)}"
                    " while being written; it was left as it is"
                )
            _keep_owner_and_mode(tmp, existing)
            os.replace(tmp, target)
    except OSError as exc:
        if isinstance(exc, BrokenPipeError):
            raise
        raise write_error(shown, exc) from None
    except UserError:
        raise
    except Exception as exc:
        # libsndfile says "System error." for a full disk: check the disk itself.
        if _disk_full(folder):
            raise UserError(f"cannot write {shown}: the disk is full") from exc
        raise
    finally:
        Path(tmp).unlink(missing_ok=True)
        unregister_temporary(tmp)


def _entries(folder: Path) -> set[str]:
    """Every name under ``folder`` (files and folders, links not followed), relative."""
    out: set[str] = set()
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            out.add(Path(root, name).relative_to(folder).as_posix())
    return out


@dataclass(frozen=True)
class FolderKind:
    """What a folder writer makes, so that it knows a folder of its own: ``marker`` says
    whether a folder holds its marker file (``pack.json``, ``pockettts.json``, ...) and
    ``names`` the names it may leave there. A folder is replaced without ``force`` only
    when it is empty, or has the marker and nothing but those names: a file the user
    put in it is never lost."""

    what: str  # "KevinAHM bundle", for messages
    marker: Callable[[Path], bool]
    names: Callable[[Path], Collection[str]]

    def strangers(self, folder: Path) -> list[str]:
        """The entries of ``folder`` that are not this writer's (all of them, unmarked)."""
        entries = _entries(folder)
        if not entries:
            return []
        if not self.marker(folder):
            return sorted(entries)
        return sorted(entries - set(self.names(folder)))


def _refused(out: Path, why: str, *fields: str) -> OutputRefused:
    return OutputRefused(f"cannot write {out}: {why}", *fields)


def check_folder_output(out_dir: str | Path, kind: FolderKind, force: bool = False) -> None:
    """Refuses, before any work, an output folder whose writing would lose something or
    that cannot be made: ``.`` and ``..``, a file, a link, a special file, a missing
    parent (never created: a typo does not make a tree), or a folder holding files this
    writer did not make (unless ``force``)."""
    out = Path(out_dir)
    if out.name in ("", ".", ".."):
        raise _refused(out, "give the name of a folder to write, not . or .. or /")
    try:
        st = os.lstat(out)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise _refused(out, os_reason(exc)) from None
    if st is None:
        parent = out.parent
        if not parent.is_dir():
            where = "is not a folder" if parent.exists() else "does not exist (it is not created)"
            raise _refused(out, f"its folder {parent} {where}")
        return
    if stat.S_ISLNK(st.st_mode):
        raise _refused(out, "it is a symbolic link (never replaced by a folder)")
    if not stat.S_ISDIR(st.st_mode):
        raise _refused(out, f"it is {describe_mode(st.st_mode)} (never replaced by a folder)")
    strangers = kind.strangers(out)
    if strangers and not force:
        shown = ", ".join(strangers[:3]) + (", ..." if len(strangers) > 3 else "")
        raise _refused(
            out,
            f"the folder holds files that are not a {kind.what} pockettts wrote ({shown});"
            " choose another folder, or set {force} to replace it",
            "force",
        )


def _publish(work: Path, out_dir: Path, kind: FolderKind, force: bool) -> None:
    """Renames ``work`` to ``out_dir``. Whatever is at ``out_dir`` by now is checked again:
    a file, link or FIFO that appeared since the first check makes the rename fail (a
    folder never replaces anything else), and a folder is moved aside, checked to be the
    folder first seen (not something swapped in), and only then deleted."""
    check_folder_output(out_dir, kind, force)
    try:
        before = os.lstat(out_dir)
    except FileNotFoundError:
        try:  # rename(2) of a folder fails on a file, link or FIFO that appeared meanwhile
            os.rename(work, out_dir)
        except OSError as exc:
            raise _refused(out_dir, f"something else appeared there ({os_reason(exc)})") from None
        return
    old = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.old-", dir=out_dir.parent))
    aside = old / "old"
    try:
        os.rename(out_dir, aside)
        moved = os.lstat(aside)
        if (moved.st_dev, moved.st_ino) != (before.st_dev, before.st_ino) or not stat.S_ISDIR(
            moved.st_mode
        ):
            os.rename(aside, out_dir)  # not what was checked: put it back, untouched
            raise _refused(out_dir, "it changed while the folder was written")
        os.rename(work, out_dir)
    except OSError as exc:
        if aside.exists() and not out_dir.exists():
            os.rename(aside, out_dir)
        raise _refused(out_dir, os_reason(exc)) from None
    finally:
        shutil.rmtree(old, ignore_errors=True)


@contextmanager
def atomic_folder(
    out_dir: Path, kind: FolderKind, verb: str = "building", force: bool = False
) -> Iterator[Path]:
    """Yields an empty sibling folder for the caller to fill; on success it takes
    ``out_dir``'s place (modes ``DIR_MODE``/``FILE_MODE``), so an interrupted build never
    leaves a folder that looks complete. On any exception it is removed. What may be at
    ``out_dir`` is checked before (``check_folder_output``) and again at the rename."""
    out_dir = Path(out_dir)
    check_folder_output(out_dir, kind, force)
    try:
        work = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.{verb}-", dir=out_dir.parent))
    except OSError as exc:
        raise _refused(out_dir, creation_reason(out_dir.parent, exc)) from None
    try:
        yield work
        os.chmod(work, DIR_MODE)
        for item in work.rglob("*"):  # a subfolder stays searchable (DIR_MODE)
            os.chmod(item, DIR_MODE if item.is_dir() else FILE_MODE)
        _publish(work, out_dir, kind, force)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
