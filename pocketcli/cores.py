"""The cores this process may use, and the one thread setting bounded by them.

``POCKETTTS_THREADS`` (and a ``threads=`` given to the library) sets the ONNX
Runtime intra-op threads per session. It is bounded by the cores this process
may run on (its CPU affinity): a larger value is lowered to that count, since
threads beyond the cores only wait for each other, and an unbounded count
could exhaust the machine's process table. A value that is not a whole number
above 0 is ignored (the default applies).
"""

from __future__ import annotations

import os

THREADS_VARIABLE = "POCKETTTS_THREADS"


def available_cores() -> int:
    """Cores this process may run on (its affinity where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # macOS, Windows
        return max(1, os.cpu_count() or 1)


def bound_threads(threads: int) -> int:
    """``threads`` lowered to the available cores (and at least 1)."""
    return max(1, min(int(threads), available_cores()))


def threads_override() -> int | None:
    """``POCKETTTS_THREADS`` when it is a whole number above 0, bounded by the cores."""
    raw = os.environ.get(THREADS_VARIABLE, "").strip()
    if not raw.isdigit() or int(raw) < 1:
        return None
    return bound_threads(int(raw[:8]))  # eight digits already pass any machine's cores
