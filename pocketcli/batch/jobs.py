"""How many workers, and how many ONNX Runtime threads each: ``--jobs N`` and ``--jobs auto``.

``--jobs N`` gives each of the N workers ``cores // N`` intra-op threads per
session (at least one; ``POCKETTTS_THREADS`` overrides). ``--jobs auto`` uses
the split that made the most audio per second in ``benchmarks/bench_batch.py
--splits`` (every worker count x threads per worker that fills the machine,
full-size English architecture, MiniMax English phrases):

    THREADS_PER_WORKER: the best threads per worker, by precision (see below)
    auto workers = min(cores // threads, available memory // worker RSS, lines)

Measured on the 2-core Linux machine this is built on (shared; see README,
"Batch at scale"). The per-worker RSS is the peak RSS of one process making
MiniMax phrases (README's benchmark table: int8 239 MB, fp32 510 MB), with a
margin.
"""

from __future__ import annotations

import os

# Best threads per worker (from benchmarks/bench_batch.py --splits; README has the table).
THREADS_PER_WORKER = {"fp32": 1, "int8": 1, "int4": 1}
# Peak RSS of one worker, MB, rounded up (README's benchmark table + margin).
WORKER_RSS_MB = {"fp32": 600, "int8": 300, "int4": 300}


def available_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # macOS, Windows
        return max(1, os.cpu_count() or 1)


def available_memory_mb() -> int | None:
    """MemAvailable from /proc/meminfo (Linux), else None (no cap)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def threads_override() -> int | None:
    raw = os.environ.get("POCKETTTS_THREADS", "").strip()
    return int(raw) if raw.isdigit() and int(raw) > 0 else None


def threads_for(workers: int, cores: int | None = None) -> int:
    """Intra-op threads per session for each of ``workers`` workers: the cores split evenly."""
    return threads_override() or max(1, (cores or available_cores()) // max(1, workers))


def auto_split(precision: str, lines: int, cores: int | None = None) -> tuple[int, int]:
    """(workers, threads per worker) for ``--jobs auto``."""
    cores = cores or available_cores()
    threads = threads_override() or THREADS_PER_WORKER.get(precision, 1)
    workers = max(1, cores // threads)
    memory = available_memory_mb()
    if memory is not None:
        workers = min(workers, max(1, memory // WORKER_RSS_MB.get(precision, 600)))
    return max(1, min(workers, lines)), threads


def parse_jobs(value: str | None) -> int | str | None:
    """``None`` (one process), a count, or "auto"; ValueError with the reason otherwise."""
    if value is None:
        return None
    value = value.strip().lower()
    if value == "auto":
        return "auto"
    if value.isdigit() and 1 <= int(value) <= 4096:
        return int(value)
    raise ValueError(f"{value!r}; give a number of worker processes (1 to 4096) or auto")
