"""The lines still to hand out, for executors whose workers can die (processes, Ray actors).

Lines lost with a worker go back to the front and are made again; a line lost
``max_attempts`` times becomes a failed result (it is probably what kills them).
When the executor knows which line was being made (a ``--jobs`` worker makes its
lines one after the other), only that one is counted: the lines queued behind it
never ran and are not blamed.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator

from pocketcli.batch.plan import Job
from pocketcli.batch.worker import LineResult


class JobQueue:
    def __init__(self, jobs: Iterator[Job], max_attempts: int = 3) -> None:
        self._jobs = jobs
        self._again: deque[Job] = deque()
        self._attempts: dict[str, int] = {}
        self._exhausted = False
        self.max_attempts = max_attempts

    def take(self, count: int) -> list[Job]:
        """Up to ``count`` lines: the ones given back first, then new ones."""
        group: list[Job] = []
        while len(group) < count and self._again:
            group.append(self._again.popleft())
        while len(group) < count and not self._exhausted:
            job = next(self._jobs, None)
            if job is None:
                self._exhausted = True
            else:
                group.append(job)
        return group

    @property
    def empty(self) -> bool:
        """Nothing left to hand out (lines out with workers may still come back)."""
        if not self._again and not self._exhausted:
            job = next(self._jobs, None)
            if job is None:
                self._exhausted = True
            else:
                self._again.append(job)
        return self._exhausted and not self._again

    def give_back(
        self, jobs: list[Job], why: str, blamed: list[Job] | None = None
    ) -> tuple[list[LineResult], int]:
        """Lines a dead worker held: (the ones that failed for good, how many go again).
        ``blamed``: the ones it was making (None: all, as a group lost at once)."""
        failed: list[LineResult] = []
        again: list[Job] = []
        for job in jobs:
            if blamed is None or any(job is b for b in blamed):
                self._attempts[job.name] = self._attempts.get(job.name, 0) + 1
            if self._attempts.get(job.name, 0) >= self.max_attempts:
                message = f"the worker making this line died {self.max_attempts} times ({why})"
                failed.append(LineResult(job, error=message))
            else:
                again.append(job)
        self._again.extendleft(reversed(again))
        return failed, len(again)
