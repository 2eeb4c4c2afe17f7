"""Progress on stderr for downloads and pack builds.

huggingface_hub draws its bars through a tqdm-like class it is handed
(``tqdm_class=``); for classes that are not tqdm subclasses it only passes
keyword arguments and calls ``update``, ``close``, ``refresh`` and the
description setters, and reads ``n``, ``total`` and ``format_dict``. A small
duck-typed class covering that surface feeds one rich Progress, so
downloads and the pack build share one display. On a terminal the bars are
live; otherwise (logs, CI, pipes) each download and build step is one
plain line, since redrawn bars make unreadable logs.
"""

from __future__ import annotations

import sys
import threading
from types import TracebackType
from typing import Any

from rich.console import Console
from rich.filesize import decimal
from rich.progress import (
    BarColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskProgressColumn,
    TextColumn,
)
from rich.text import Text


class _Amount(ProgressColumn):
    """Bytes for byte bars, counts for the others."""

    def render(self, task: Task) -> Text:
        done, total = int(task.completed), task.total
        if task.fields.get("unit") == "B":
            text = decimal(done) + (f"/{decimal(int(total))}" if total else "")
        else:
            text = f"{done}" + (f"/{int(total)}" if total else "")
        return Text(text, style="progress.download")


class Reporter:
    """One progress display for a store operation; a no-op when ``enabled`` is False."""

    def __init__(self, enabled: bool, console: Console | None = None) -> None:
        self.enabled = enabled
        self.console = console or Console(stderr=True)
        self.live = enabled and self.console.is_terminal
        self._progress: Progress | None = None
        self._build_task: Any = None
        self._lock = threading.Lock()

    def __enter__(self) -> Reporter:
        if self.live:
            self._progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                TaskProgressColumn(),
                _Amount(),
                console=self.console,
                transient=False,
            )
            self._progress.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def line(self, message: str) -> None:
        """A message that stays (notes, non-terminal progress), said as every other line
        of the CLI is: ``pockettts: downloading ...``."""
        if not self.enabled:
            return
        message = f"pockettts: {message}"
        if self._progress is not None:
            self._progress.console.print(message, highlight=False, markup=False)
        else:
            sys.stderr.write(message + "\n")
            sys.stderr.flush()

    def progress_line(self, message: str) -> None:
        """A line only when there are no live bars (they show the same thing)."""
        if self._progress is None:
            self.line(message)

    def note(self, message: str) -> None:
        self.line(f"note: {message}")

    def step(self, message: str) -> None:
        """A pack-build step (the builder's progress callback)."""
        if self._progress is None:
            self.line(f"building pack: {message}")
            return
        if self._build_task is None:
            self._build_task = self._progress.add_task(f"building pack: {message}", total=None)
        else:
            self._progress.update(self._build_task, description=f"building pack: {message}")

    def finish_build(self) -> None:
        if self._progress is not None and self._build_task is not None:
            self._progress.update(
                self._build_task, total=1, completed=1, description="building pack: done"
            )
        self._build_task = None

    def tqdm_class(self, label: str | None = None) -> type:
        """A tqdm stand-in for huggingface_hub, bound to this reporter.

        ``label`` replaces huggingface_hub's description of a single-file bar (a
        URL cut to 40 characters) with ours.
        """
        reporter = self

        class Bar(_Bar):
            owner = reporter
            name = label

        return Bar


_AGGREGATE = ("Downloading bytes", "Fetching", "Reconstruct")


class _Bar:
    """What huggingface_hub uses of a tqdm bar, drawn by the owning Reporter."""

    owner: Reporter
    name: str | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.n = kwargs.get("initial") or 0
        self._total = kwargs.get("total")
        self.desc = str(kwargs.get("desc") or "")
        if self.name and kwargs.get("unit") == "B" and not self.desc.startswith(_AGGREGATE):
            self.desc = self.name
        self.unit = kwargs.get("unit", "it")
        self.format_dict: dict[str, Any] = {"rate": None}
        # The snapshot download feeds the same bytes to a "Reconstructing" and a
        # "Downloading bytes" bar; one of them is enough.
        self._task: Any = None
        progress = self.owner._progress
        # Without a terminal the callers print one line per download instead.
        if progress is not None and not self.desc.startswith("Reconstruct"):
            self._task = progress.add_task(
                self._label(), total=self._total, completed=self.n, unit=self.unit
            )

    def _label(self) -> str:
        desc = self.desc if len(self.desc) <= 40 else "…" + self.desc[-39:]
        return desc or "downloading"

    @property
    def total(self) -> int | float | None:
        return self._total

    @total.setter
    def total(self, value: int | float | None) -> None:
        self._total = value
        self._redraw()

    def _redraw(self, **fields: Any) -> None:
        progress = self.owner._progress
        if self._task is not None and progress is not None:
            with self.owner._lock:
                progress.update(self._task, total=self._total, completed=self.n, **fields)

    def update(self, n: int | float | None = 1) -> None:
        self.n += n or 0
        self._redraw()

    def refresh(self, *args: Any, **kwargs: Any) -> None:
        self._redraw()

    def set_description(self, desc: str | None = None, refresh: bool = True) -> None:
        self.desc = str(desc or "")
        self._redraw(description=self._label())

    set_description_str = set_description

    def set_postfix_str(self, *args: Any, **kwargs: Any) -> None:
        pass

    def close(self) -> None:
        self._redraw()

    def __enter__(self) -> _Bar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
