"""Progress of a long batch: lines done/total, audio hours made, aggregate RTFx and ETA.

On a terminal it is a rich progress bar (messages print above it); otherwise
one plain line every ``interval`` seconds and a last one at the end, so logs
of a week-long run stay readable. Aggregate RTFx here is audio made per second
of wall-clock time since the run started, over all workers together.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

PLAIN_INTERVAL = 10.0  # seconds between plain progress lines


def format_duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}"


class BatchProgress:
    def __init__(
        self,
        total: int,
        *,
        quiet: bool = False,
        stream: TextIO | None = None,
        interval: float = PLAIN_INTERVAL,
        terminal: bool | None = None,
    ) -> None:
        self.total = total
        self.done = 0
        self.instant = 0  # lines done without work (refused): no part of the ETA's rate
        self.audio = 0.0
        self.quiet = quiet
        self.stream = stream or sys.stderr
        self.interval = interval
        self.terminal = self.stream.isatty() if terminal is None else terminal
        self.started = time.perf_counter()
        self._last_plain = self.started
        self._bar = None
        self._task = None

    # -- figures -----------------------------------------------------------
    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    @property
    def rtfx(self) -> float:
        elapsed = self.elapsed
        return self.audio / elapsed if elapsed > 0 else 0.0

    def eta(self) -> str:
        made = self.done - self.instant
        if self.done < self.total and made <= 0:
            return "?"
        return format_duration((self.total - self.done) * self.elapsed / max(1, made))

    def status(self) -> str:
        return (
            f"{self.done}/{self.total} lines, {self.audio / 3600:.3f} h audio, "
            f"RTFx {self.rtfx:.2f}, ETA {self.eta()}"
        )

    # -- output ------------------------------------------------------------
    def __enter__(self) -> BatchProgress:
        self.started = self._last_plain = time.perf_counter()
        if not self.quiet and self.terminal and self.total > 0:
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TextColumn

            console = Console(file=self.stream, force_terminal=True)
            self._bar = Progress(
                TextColumn("batch"),
                BarColumn(),
                TextColumn("{task.description}"),
                console=console,
                transient=False,
            )
            self._task = self._bar.add_task(self.status(), total=self.total)
            self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
        elif not self.quiet and self.done and exc[0] is None:
            self._plain()

    def line_done(self, audio_seconds: float, *, made: bool = True) -> None:
        """One line finished (made or failed; ``made=False``: refused, no work done)."""
        self.done += 1
        self.instant += not made
        self.audio += audio_seconds
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done, description=self.status())
        elif not self.quiet and time.perf_counter() - self._last_plain >= self.interval:
            self._plain()

    def note(self, message: str) -> None:
        """A message for the user (errors, warnings): above the bar, or a plain line."""
        if self._bar is not None:
            self._bar.console.print(message, markup=False, highlight=False)
        else:
            self.stream.write(message + "\n")
            self.stream.flush()

    def _plain(self) -> None:
        self._last_plain = time.perf_counter()
        self.stream.write(f"batch: {self.status()}\n")
        self.stream.flush()
