"""Mutation check of the batch package: each listed one-line mistake, applied alone to a
scratch copy of the repository, must make the named tests fail.

    python scripts/mutate_batch.py            # the fast ones (no worker processes)
    python scripts/mutate_batch.py --all      # also those that need --jobs runs (minutes)

The scratch copy is imported first (``PYTHONPATH``), by the tests and by the CLI they
start, so the mistake is what runs. Prints one line per mistake and exits 1 if any
survived.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Mistake:
    what: str
    file: str
    old: str
    new: str
    tests: str  # pytest node ids or -k expression, space separated node ids
    slow: bool = False


MISTAKES = [
    Mistake(
        "done ignores the size",
        "pocketcli/batch/manifest.py",
        " or st.st_size != entry.bytes",
        "",
        "tests/test_batch_manifest.py::test_a_file_of_another_size_with_the_recorded_mtime_is_not_done",
    ),
    Mistake(
        "no fsync of a record",
        "pocketcli/batch/manifest.py",
        "            os.fsync(self._fd)\n",
        "            pass\n",
        "tests/test_batch_manifest.py::test_a_record_is_fsynced_after_it_is_written",
    ),
    Mistake(
        "a symlinked manifest is followed",
        "pocketcli/batch/manifest.py",
        'flags | getattr(os, "O_NOFOLLOW", 0)',
        "flags",
        "tests/test_batch_manifest.py::test_a_symlinked_manifest_is_never_followed",
    ),
    Mistake(
        "the manifest is read whole lines at a time",
        "pocketcli/batch/manifest.py",
        "raw = f.readline(MAX_RECORD_BYTES + 1)",
        "raw = f.readline()",
        "tests/test_batch_manifest.py::test_a_huge_record_is_skipped_in_bounded_memory",
    ),
    Mistake(
        "a failed append leaves its bytes",
        "pocketcli/batch/manifest.py",
        "                os.ftruncate(self._fd, size)\n",
        "                pass\n",
        "tests/test_batch_manifest.py::test_a_failed_write_leaves_the_manifest_as_it_was",
    ),
    Mistake(
        "the byte order mark is kept",
        "pocketcli/batch/parse.py",
        "    if data.startswith(_BOM):",
        "    if False:",
        "tests/test_batch_ids_and_refused_lines.py::test_a_byte_order_mark_is_dropped_from_the_first_line",
    ),
    Mistake(
        "b.wav is written b.wav.wav",
        "pocketcli/batch/parse.py",
        'return head[:-4] if head.lower().endswith(".wav") and len(head) > 4 else head',
        "return head",
        "tests/test_batch_ids_and_refused_lines.py::test_an_id_ending_in_wav_names_the_file_itself",
    ),
    Mistake(
        "ids differing in case are both kept",
        "pocketcli/batch/parse.py",
        "if (first := seen.get(name.lower())) is not None:",
        "if (first := seen.get(name)) is not None:",
        "tests/test_batch_ids_and_refused_lines.py::test_ids_that_differ_only_in_case_are_refused_on_the_later_line",
    ),
    Mistake(
        "no line length limit",
        "pocketcli/batch/parse.py",
        "        if len(raw) > MAX_LINE_BYTES:",
        "        if False:",
        "tests/test_batch_ids_and_refused_lines.py::test_a_line_longer_than_the_limit_is_refused_without_its_text",
    ),
    Mistake(
        "refused lines are not in the progress total",
        "pocketcli/batch/runner.py",
        "BatchProgress(len(todo) + len(refused), quiet=quiet)",
        "BatchProgress(len(todo), quiet=quiet)",
        "tests/test_batch_ids_and_refused_lines.py::test_refused_lines_count_in_the_progress_and_can_be_accepted",
        slow=True,
    ),
    Mistake(
        "--accept-refused is ignored",
        "pocketcli/batch/runner.py",
        "self.failed - (self.refused if accept_refused else 0)",
        "self.failed",
        "tests/test_batch_ids_and_refused_lines.py::test_refused_lines_count_in_the_progress_and_can_be_accepted",
        slow=True,
    ),
    Mistake(
        "a line is failed after four deaths",
        "pocketcli/batch/processes.py",
        "MAX_ATTEMPTS = 3",
        "MAX_ATTEMPTS = 4",
        "tests/test_batch_worker_deaths.py::test_a_line_that_kills_its_workers_fails_after_three",
        slow=True,
    ),
    Mistake(
        "lines queued behind the killer are blamed too",
        "pocketcli/batch/processes.py",
        "blamed=held[:1]",
        "blamed=None",
        "tests/test_batch_worker_deaths.py::test_a_line_that_kills_its_workers_fails_after_three",
        slow=True,
    ),
    Mistake(
        "a send to a dead worker loses the rest of its group",
        "pocketcli/batch/processes.py",
        'queue.give_back(group[index:], "", blamed=[])',
        'queue.give_back(group[index : index + 1], "", blamed=[])',
        "tests/test_batch_worker_deaths.py::test_a_line_for_a_worker_that_just_died_goes_back_to_the_queue",
    ),
    Mistake(
        "a send to a dead worker is not caught (click's silent exit 1)",
        "pocketcli/batch/processes.py",
        "            except OSError:\n                slot.broken = True",
        "            except ZeroDivisionError:\n                slot.broken = True",
        "tests/test_batch_worker_deaths.py::test_a_line_for_a_worker_that_just_died_goes_back_to_the_queue",
    ),
    Mistake(
        "a worker killed while loading stops the batch",
        "pocketcli/batch/processes.py",
        "if self._load_deaths >= MAX_ATTEMPTS and not any(s.ready for s in self._slots):",
        "if True:",
        "tests/test_batch_worker_deaths.py::test_a_replacement_killed_while_it_loads_costs_nothing",
        slow=True,
    ),
    Mistake(
        "the manifest's error is not caught for the summary",
        "pocketcli/batch/runner.py",
        "        except ManifestWriteError:\n",
        "        except ZeroDivisionError:\n",
        "tests/test_batch_full_disk.py::test_a_full_disk_stops_with_the_summary_and_the_manifest_path",
        slow=True,
    ),
]


def _copy() -> Path:
    scratch = Path(tempfile.mkdtemp(prefix="pockettts-mutate-"))
    ignore = shutil.ignore_patterns(".git", ".venv", "__pycache__", "*.pyc", ".pytest_cache")
    for name in ("pocketcli", "tests", "pyproject.toml"):
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, scratch / name, ignore=ignore)
        else:
            shutil.copy2(source, scratch / name)
    return scratch


def _run(scratch: Path, mistake: Mistake) -> bool:
    """True if the tests caught the mistake (failed)."""
    path = scratch / mistake.file
    original = path.read_text()
    if original.count(mistake.old) != 1:
        raise SystemExit(f"{mistake.what}: the text to change is not in {mistake.file} once")
    path.write_text(original.replace(mistake.old, mistake.new))
    try:
        env = dict(os.environ, PYTHONPATH=str(scratch))
        r = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider"]
            + mistake.tests.split(),
            cwd=scratch,
            env=env,
            capture_output=True,
            timeout=1800,
        )
        return r.returncode == 1  # tests failed (not: none collected, usage error)
    finally:
        path.write_text(original)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--all", action="store_true", help="also the slow (--jobs) mistakes")
    args = parser.parse_args()
    scratch = _copy()
    survived = 0
    try:
        chosen = [m for m in MISTAKES if args.all or not m.slow]
        for mistake in chosen:
            caught = _run(scratch, mistake)
            survived += not caught
            print(f"{'caught  ' if caught else 'SURVIVED'} {mistake.what}", flush=True)
        print(f"{len(chosen) - survived} of {len(chosen)} mistakes caught")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 1 if survived else 0


if __name__ == "__main__":
    raise SystemExit(main())
