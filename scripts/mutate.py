"""Mutation run: single-line mistakes, each applied to a scratch copy, each must fail a test.

The mistakes are listed in scripts/mutations/*.txt (core: the EOS loop, the chunker, the
issue 25 audit...; serve: the server; batch: the batch package). An entry:

    == name
    file: PATH
    tests: PYTEST ARGS            (files, node ids, "-k" and one word)
    needs: workers                (optional: its tests run --jobs batches; only with --all)
    -the line as it is now
    +the mistake (none: the line is dropped)

a hunk of whole lines as in a unified diff, with " " unchanged context lines (not blank
ones) when the place is not unique: the hunk must occur exactly once. The script copies
the repository's files
(tracked and untracked, not ignored) into a temporary folder, checks that the listed tests
pass there unchanged, then for each mistake edits the copy, runs its tests with the copy
first on ``sys.path`` (the CLI's subprocesses too, through ``PYTHONPATH``), and puts the
line back. The worktree is never written to.

    python scripts/mutate.py                # every mistake but "needs: workers" ones
    python scripts/mutate.py --all          # those too (minutes each)
    python scripts/mutate.py --file serve   # only scripts/mutations/serve.txt
    python scripts/mutate.py -k peak        # only mistakes whose name contains "peak"
    python scripts/mutate.py --list         # what would be tried
    python scripts/mutate.py --check        # only that every mistake applies (seconds)

A mistake whose line is no longer in its file is reported as stale (and fails the run):
update the entry when the code it aims at changes.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


MUTATIONS_DIR = Path(__file__).with_name("mutations")


@dataclass(frozen=True)
class Mutation:
    name: str
    path: str  # relative to the repository root
    old: str  # whole lines; must occur exactly once in the file
    new: str
    tests: tuple[str, ...]  # pytest arguments: files, node ids, "-k" expressions
    workers: bool = False  # its tests start --jobs worker processes (slow)


class MutationsFileError(ValueError):
    pass


def parse_mutations(text: str) -> list[Mutation]:
    """The entries of a mutations file (its format is described at its top)."""
    entries: list[Mutation] = []
    fields: dict[str, str] = {}
    old: list[str] = []
    new: list[str] = []

    def close() -> None:
        if not fields:
            return
        missing = {"name", "file", "tests"} - set(fields)
        if fields.get("needs", "workers") != "workers":
            raise MutationsFileError(f"entry {fields['name']!r}: needs what? {fields['needs']!r}")
        if missing or not old:
            what = ", ".join(sorted(missing)) or "a '-' line"
            raise MutationsFileError(f"entry {fields.get('name', '?')!r} has no {what}")
        before, after = "".join(old), "".join(new)
        if before == after:
            raise MutationsFileError(f"entry {fields['name']!r} changes nothing")
        tests = tuple(fields["tests"].split())
        workers = "needs" in fields
        entries.append(Mutation(fields["name"], fields["file"], before, after, tests, workers))

    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("== "):
            close()
            fields, old, new = {"name": line[3:].strip()}, [], []
        elif not fields or not line.strip() or line.startswith("#"):
            continue
        elif line.startswith(("file: ", "tests: ", "needs: ")):
            key, _, value = line.partition(": ")
            fields[key] = value.strip()
        elif line[0] in "-+ ":
            body = line[1:] + "\n"
            if line[0] != "+":
                old.append(body)
            if line[0] != "-":
                new.append(body)
        else:
            raise MutationsFileError(f"line {number}: not part of an entry: {line!r}")
    close()
    return entries


def read_mutations(files: list[str]) -> list[Mutation]:
    """The entries of scripts/mutations/NAME.txt for each name given (all files if none)."""
    paths = [MUTATIONS_DIR / f"{name}.txt" for name in files] or sorted(MUTATIONS_DIR.glob("*.txt"))
    entries: list[Mutation] = []
    for path in paths:
        if not path.is_file():
            known = ", ".join(p.stem for p in sorted(MUTATIONS_DIR.glob("*.txt")))
            raise MutationsFileError(f"{path}: no such mutations file (known: {known})")
        try:
            entries += parse_mutations(path.read_text(encoding="utf-8"))
        except MutationsFileError as exc:
            raise MutationsFileError(f"{path}: {exc}") from None
    names = [e.name for e in entries]
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise MutationsFileError(f"two entries have the same name: {', '.join(twice)}")
    return entries


def stale_reason(root: Path, mu: Mutation) -> str | None:
    """Why the mistake cannot be applied to the files under root (None: it can)."""
    path = root / mu.path
    if not path.is_file():
        return f"{mu.path} does not exist"
    found = path.read_text(encoding="utf-8").count(mu.old)
    if found != 1:
        return f"its line occurs {found} times in {mu.path}"
    for test in mu.tests:
        test_file = test.split("::")[0]
        if test_file.startswith("tests/") and not (root / test_file).is_file():
            return f"its test file {test_file} does not exist"
    return None


def _copy_repository(dest: Path) -> None:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for raw in listed:
        if not raw:
            continue
        rel = Path(os.fsdecode(raw))
        source = ROOT / rel
        if not source.is_file():  # deleted in the worktree but still tracked
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)


def _pytest(scratch: Path, tests: tuple[str, ...]) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(scratch), PYTHONDONTWRITEBYTECODE="1")
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests]
    return subprocess.run(command, cwd=scratch, env=env, capture_output=True, text=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="print the mistakes and exit")
    parser.add_argument("-k", default="", help="only mistakes whose name contains this")
    parser.add_argument(
        "--file",
        action="append",
        default=[],
        metavar="NAME",
        help="only the mistakes of scripts/mutations/NAME.txt (repeatable; default: all)",
    )
    parser.add_argument(
        "--all", action="store_true", help='also the "needs: workers" mistakes (minutes each)'
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="only check that every chosen mistake applies (with or without --all); no tests",
    )
    parser.add_argument(
        "--from",
        dest="start",
        type=int,
        default=1,
        metavar="N",
        help="start at the Nth mistake (to split a run in parts)",
    )
    args = parser.parse_args()
    try:
        mutations = read_mutations(args.file)
    except MutationsFileError as exc:
        print(f"mutate.py: error: {exc}", file=sys.stderr)
        return 2
    chosen = [mu for mu in mutations[args.start - 1 :] if args.k in mu.name]
    if args.check:
        stale = [(mu, why) for mu in chosen if (why := stale_reason(ROOT, mu)) is not None]
        for mu, why in stale:
            print(f"STALE     {mu.name}: {why}")
        print(f"{len(chosen)} mistakes checked: {len(stale)} stale")
        return 1 if stale else 0
    chosen = [mu for mu in chosen if args.all or not mu.workers]
    if args.list:
        for mu in chosen:
            slow = " (needs workers)" if mu.workers else ""
            print(f"{mu.name}: {mu.path} -> {' '.join(mu.tests)}{slow}")
        print(f"{len(chosen)} mistakes")
        return 0
    with tempfile.TemporaryDirectory(prefix="pockettts-mutate.") as tmp:
        scratch = Path(tmp)
        _copy_repository(scratch)
        groups = sorted({mu.tests for mu in chosen})
        for tests in groups:
            base = _pytest(scratch, tests)
            if base.returncode != 0:
                print(f"the tests pass not even unmutated: {' '.join(tests)}")
                print(base.stdout[-3000:], base.stderr[-2000:])
                return 2
        caught, survived, stale = [], [], []
        for mu in chosen:
            why = stale_reason(scratch, mu)
            if why is not None:
                stale.append(mu)
                print(f"STALE     {mu.name}: {why}")
                continue
            path = scratch / mu.path
            text = path.read_text(encoding="utf-8")
            path.write_text(text.replace(mu.old, mu.new), encoding="utf-8")
            start = time.monotonic()
            try:
                result = _pytest(scratch, mu.tests)
            finally:
                path.write_text(text, encoding="utf-8")
            seconds = time.monotonic() - start
            if result.returncode == 0:
                survived.append(mu)
                print(f"SURVIVED  {mu.name} ({seconds:.0f} s)", flush=True)
            else:
                caught.append(mu)
                failed = [line for line in result.stdout.splitlines() if line.startswith("FAILED")]
                how = failed[0].removeprefix("FAILED ") if failed else f"exit {result.returncode}"
                print(f"caught    {mu.name} ({seconds:.0f} s): {how[:110]}", flush=True)
        print(
            f"{len(chosen)} mistakes tried: {len(caught)} caught, {len(survived)} survived,"
            f" {len(stale)} stale"
        )
        return 0 if not survived and not stale else 1


if __name__ == "__main__":
    sys.exit(main())
