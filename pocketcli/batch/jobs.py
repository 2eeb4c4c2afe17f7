"""How many workers, and how many ONNX Runtime threads each: ``--jobs N`` and ``--jobs auto``.

``--jobs N`` gives each of the N workers ``cores // N`` intra-op threads per
session (at least one; ``POCKETTTS_THREADS`` overrides). Worker processes on this
machine are at most its cores and what free memory holds: a larger N is lowered,
with a note (``bound_workers``); on a Ray cluster N is the cluster's to hold. ``--jobs auto``:

    workers = min(cores // THREADS_PER_WORKER, free memory // WORKER_RSS_MB, lines)

and one worker runs in the calling process (no start-up to pay, so auto is
never slower than the one-process batch).

The rule comes from ``benchmarks/bench_batch.py --splits`` (every workers x
threads split of the machine; full-size English architecture, int8, MiniMax
English phrases) on the 2-core Linux machine this is built on, 2026-12-01,
under a load average of 10 to 12 from other engineers' runs (README, "Batch at
scale"). CPU seconds per second of audio, which the neighbours' load barely
moves, was the same for every split:

    split (workers x threads)   1x1    1x2    2x1    2x2
    CPU s per audio s           0.29   0.27   0.31   0.32

so splitting costs nothing and gains nothing per core; what decides is how
many cores one worker keeps busy. A worker runs the FlowLM and the Mimi decoder
side by side on two threads: at 0.27 CPU s per audio s and its RTFx of 7.5
(README, bench_engine int8) it keeps 2.0 cores busy. Hence two threads and two
cores per worker: one worker on this machine, cores / 2 on a bigger one.
Precisions other than int8 were not split-measured; they use the same rule (the
same two-thread structure). The per-worker RSS is the peak RSS of one process
(README's benchmark table: int8 239 MB, fp32 510 MB) with a margin.
"""

from __future__ import annotations

from pocketcli import defaults
from pocketcli.cores import available_cores, threads_override

__all__ = [
    "auto_split",
    "available_cores",
    "available_memory_mb",
    "bound_workers",
    "parse_jobs",
    "threads_for",
]

from pocketcli.runtimes.base import Runtime, batching

# Threads (and cores) per worker for --jobs auto (measured: see above).
THREADS_PER_WORKER = {"fp32": 2, "int8": 2, "int4": 2}
# Peak RSS of one worker, MB, rounded up (README's benchmark table + margin).
WORKER_RSS_MB = {"fp32": 600, "int8": 300, "int4": 300}


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


def threads_for(workers: int, cores: int | None = None) -> int:
    """Intra-op threads per session for each of ``workers`` workers: the cores split evenly."""
    return threads_override() or max(1, (cores or available_cores()) // max(1, workers))


def memory_holds(precision: str) -> int | None:
    """How many workers free memory holds (at least one), or None where it is unknown."""
    memory = available_memory_mb()
    if memory is None:
        return None
    return max(1, memory // WORKER_RSS_MB.get(precision, 600))


def auto_split(precision: str, lines: int, cores: int | None = None) -> tuple[int, int]:
    """(workers, threads per worker) for ``--jobs auto``."""
    cores = cores or available_cores()
    threads = min(cores, threads_override() or THREADS_PER_WORKER.get(precision, 2))
    workers = max(1, cores // threads)
    held = memory_holds(precision)
    if held is not None:
        workers = min(workers, held)
    return max(1, min(workers, lines)), threads


def bound_workers(workers: int, precision: str, cores: int | None = None) -> tuple[int, str]:
    """``--jobs N`` on this machine: at most its cores (a worker runs one thread at least,
    so more only wait for each other, each holding a copy of the model) and what free
    memory holds. Returns the count and, when it was lowered, the reason ("" if not)."""
    cores = cores or available_cores()
    held = memory_holds(precision)
    if workers > cores and (held is None or cores <= held):
        return cores, f"{cores} core{'s' if cores > 1 else ''} this process may use"
    if held is not None and workers > held:
        mb = WORKER_RSS_MB.get(precision, 600)
        return held, f"{held} worker{'s' if held > 1 else ''} of about {mb} MB in free memory"
    return workers, ""


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


# Lines in flight in one process with ``--streams auto``, when the runtime batches: each
# tick then reads the FlowLM weights once for all of them (``defaults.MAX_STREAMS``, the one
# default of every front end); a runtime that cannot batch gains nothing from rows it
# runs one after the other, so it keeps one line.
AUTO_STREAMS = defaults.MAX_STREAMS


def parse_streams(value: str | None) -> int | None:
    """``None`` or "auto" (the runtime's measured default), or a count of lines at once."""
    if value is None or value.strip().lower() == "auto":
        return None
    value = value.strip()
    if value.isdigit() and 1 <= int(value) <= 256:
        return int(value)
    raise ValueError(f"{value!r}; give a number of lines spoken at once (1 to 256) or auto")


def auto_streams(runtime: Runtime) -> int:
    return AUTO_STREAMS if batching(runtime) is not None else 1
