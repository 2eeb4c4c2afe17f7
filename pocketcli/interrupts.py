"""Ctrl-C, SIGTERM and the other signals that end a process: a clean exit within a
bounded time, whatever happens.

Handled: SIGINT (130, "interrupted"), SIGTERM (143, "terminated"), SIGHUP (129),
SIGUSR1 (138), SIGUSR2 (140) and SIGALRM (142), whose default action would end
the process silently and leave temporary files. SIGPIPE stays ignored, as in
every Python program: a reader that goes away is a write error where the
write happens (``-o -`` then ends quietly with 141).

The first signal raises (KeyboardInterrupt, or ``Terminated`` for the others) in
the main thread so the stack unwinds and temporary files are removed; it is
also recorded, and ``atomic_path`` refuses to publish a file once one
arrived (Python sometimes swallows an exception raised inside its own
machinery). Later signals are only recorded: raising again inside cleanup
code is what used to leave tracebacks.

The process then ends with ``hard_exit``: the registered temporary files are
removed, one line goes to stderr (none for Ctrl-C and SIGTERM to ``tts`` or a server:
``stop_quietly``) and ``os._exit`` ends it, skipping
interpreter shutdown (where ONNX Runtime's threads could hang it or abort it
with "terminate called without an active exception"). A watchdog thread
started by the first signal calls ``hard_exit`` itself if unwinding has not
finished within ``GRACE_SECONDS``, so the process always ends within about
``GRACE_SECONDS`` of the first signal.

What this cannot cover: a signal that arrives while CPython itself is still
starting (its ``site`` import, the first few tens of milliseconds) gets
CPython's own behaviour, before any pockettts code exists to handle it.
"""

from __future__ import annotations

import _thread  # builtin: this module is imported first, before anything slow
import os
import signal
import sys
import time

stopped_by: list[int] = []
GRACE_SECONDS = 1.0

_temporary: set[str] = set()
_exiting = _thread.allocate_lock()
_finishing = False
_armed = False
_quiet = False


class Terminated(BaseException):
    """Raised in the main thread on SIGTERM (and SIGHUP, ...) so cleanup still runs."""


def register_temporary(path: str) -> None:
    """A file to delete if the process is ended by a signal before it is published."""
    _temporary.add(path)


def unregister_temporary(path: str) -> None:
    _temporary.discard(path)


STOP_SIGNALS = tuple(
    getattr(signal, name)
    for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGUSR1", "SIGUSR2", "SIGALRM")
    if hasattr(signal, name)  # Windows has only SIGINT and SIGTERM
)


def exit_status() -> int:
    """128 + the first signal's number (130 for Ctrl-C, 143 for SIGTERM)."""
    return 128 + int(stopped_by[0]) if stopped_by else 130


def stop_word() -> str:
    """The one line's words for the first signal."""
    first = stopped_by[0] if stopped_by else signal.SIGINT
    if first == signal.SIGINT:
        return "interrupted"
    if first == signal.SIGTERM:
        return "terminated"
    if first == getattr(signal, "SIGHUP", None):
        return "hung up (SIGHUP)"
    return f"stopped by {signal.Signals(first).name}"


def stop_quietly() -> None:
    """From now on Ctrl-C and SIGTERM end the process with their exit status (130, 143)
    and no error line: for ``tts`` and the servers (``serve``, ``wyoming``, ``mcp``),
    whose normal stop they are. Other signals (a hang-up...) still say what stopped it."""
    global _quiet
    _quiet = True


# The commands whose normal stop is Ctrl-C or SIGTERM: the servers, and ``tts`` (a long
# text, a batch, ``--follow`` or ``--play`` is stopped the same way; its output files are
# atomic, so nothing half-written is left to warn about).
QUIET_COMMANDS = frozenset({"tts", "serve", "wyoming", "mcp"})


def stop_quietly_for(argv: list[str]) -> None:
    """``stop_quietly`` when ``argv`` (the arguments after the program's name) runs one of
    ``QUIET_COMMANDS``: decided before anything is imported, so a signal that arrives
    while the command is still starting is as quiet as one during its work."""
    if argv[:1] and argv[0] in QUIET_COMMANDS:
        stop_quietly()


def quiet_stop() -> bool:
    """Whether the first signal is a stop that ends without a line (``stop_quietly``)."""
    return _quiet and (not stopped_by or stopped_by[0] in (signal.SIGINT, signal.SIGTERM))


def hard_exit() -> None:
    """Removes registered temporary files, writes the one line and ends the process now."""
    if not _exiting.acquire(blocking=False):
        while True:  # another thread is already ending the process
            time.sleep(1)
    for path in list(_temporary):
        try:  # noqa: SIM105 - contextlib is not imported this early
            os.unlink(path)
        except OSError:
            pass
    word = stop_word()
    try:  # noqa: SIM105
        sys.stdout.flush()
    except Exception:  # a closed or broken stdout must not stop the exit
        pass
    try:  # noqa: SIM105
        if not quiet_stop():
            os.write(2, f"pockettts: error: {word}\n".encode())
    except OSError:
        pass
    os._exit(exit_status())


def _watchdog() -> None:
    time.sleep(GRACE_SECONDS)
    hard_exit()


def _in_spawned_worker() -> bool:
    """True in a process started by multiprocessing (a ``--jobs`` batch worker), which
    re-imports the console script and so these handlers while it starts."""
    if "--multiprocessing-fork" in sys.argv:  # spawn's marker, until it restores our argv
        return True
    mp = sys.modules.get("multiprocessing")  # which by then has named this process
    return mp is not None and mp.current_process().name != "MainProcess"


def _on_signal(signum, frame) -> None:  # noqa: ARG001
    if _in_spawned_worker():
        # The driver reports and decides: a worker still starting up ignores Ctrl-C (sent
        # to the whole process group) and ends at once, silently, on SIGTERM.
        if signum == signal.SIGTERM:
            os._exit(128 + signum)
        return
    stopped_by.append(signum)
    if _finishing or not _armed:
        hard_exit()  # the work is done, or not begun: nothing to unwind
    if len(stopped_by) > 1:
        return  # already stopping: never raise inside cleanup
    _thread.start_new_thread(_watchdog, ())
    raise KeyboardInterrupt() if signum == signal.SIGINT else Terminated()


def _on_unraisable(unraisable) -> None:
    # Python swallows an exception raised where it cannot propagate (a weakref callback,
    # a __del__) and prints "Exception ignored in ..." with a traceback. Our own stop
    # exception landing there is not an error: end the process now, as the watchdog would.
    if stopped_by and isinstance(unraisable.exc_value, Terminated | KeyboardInterrupt):
        hard_exit()
    sys.__unraisablehook__(unraisable)


def install_signal_handlers(*, armed: bool = True, quiet_for: list[str] | None = None) -> None:
    """``armed``: a signal raises (the caller has a handler ready to unwind); until
    then, as while the console script is still importing, it ends the process at once.
    ``quiet_for``: the command line's arguments, for ``stop_quietly_for``."""
    global _armed
    if quiet_for is not None:
        stop_quietly_for(quiet_for)
    _armed = _armed or armed
    # Blocked while installing: one arriving between two installs would otherwise find
    # its default action (SIGTERM: a silent death) or a half-installed set. It waits,
    # pending, and is handled by ``_on_signal`` once every handler is in place.
    blocking = hasattr(signal, "pthread_sigmask")  # not on Windows
    if blocking:
        before = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        for signum in STOP_SIGNALS:
            signal.signal(signum, _on_signal)
        sys.unraisablehook = _on_unraisable
    finally:
        if blocking:
            signal.pthread_sigmask(signal.SIG_SETMASK, before)


def finishing() -> None:
    """From now on a signal ends the process at once (the program is only exiting)."""
    global _finishing
    _finishing = True


def raise_if_stopped() -> None:
    if stopped_by:
        raise KeyboardInterrupt() if stopped_by[0] == signal.SIGINT else Terminated()
