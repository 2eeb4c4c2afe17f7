"""Mutation run: single-line mistakes, each applied to a scratch copy, each must fail a test.

Every entry of ``MUTATIONS`` names a file, one line's text as it is now, the mistake to put
in its place and the tests that should catch it. The script copies the repository's files
(tracked and untracked, not ignored) into a temporary folder, checks that the listed tests
pass there unchanged, then for each mistake edits the copy, runs its tests with the copy
first on ``sys.path`` (the CLI's subprocesses too, through ``PYTHONPATH``), and puts the
line back. The worktree is never written to.

    python scripts/mutate.py            # every mistake; exit 1 if one survived
    python scripts/mutate.py --list     # what would be tried
    python scripts/mutate.py -k peak    # only mistakes whose name contains "peak"

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


@dataclass(frozen=True)
class Mutation:
    name: str
    path: str  # relative to the repository root
    old: str  # must occur exactly once in the file
    new: str
    tests: tuple[str, ...]  # pytest arguments: files, node ids, "-k" expressions


def m(name: str, path: str, old: str, new: str, *tests: str) -> Mutation:
    return Mutation(name, path, old, new, tests)


GEN = "pocketcli/engine/generator.py"
CHUNKING = "pocketcli/text/chunking.py"
OUTPUT = "pocketcli/audio/output.py"
POST = "pocketcli/audio/postprocess.py"
STATE = "pocketcli/voices/state.py"
OPTIONS = "pocketcli/options.py"
TENSOR = "pocketcli/tensorfile.py"
ORACLE = "tests/test_oracle_defaults.py"
LEVELS = "tests/test_output_levels.py"
CUTS = "tests/test_sentence_cuts.py"
SHAPES = "tests/test_voice_state_checks.py"
FUZZ = "tests/test_file_fuzzing.py"
PUBLISH = "tests/test_signal_before_publish.py"

MUTATIONS: tuple[Mutation, ...] = (
    # Issue 25, item 1: frames_after_eos=0 must stop at the EOS frame itself.
    m("eos tail one frame long", GEN,
      "if eos_step is not None and step >= eos_step + plan.frames_after_eos:\n                break\n            latent",
      "if eos_step is not None and step > eos_step + plan.frames_after_eos:\n                break\n            latent",
      ORACLE),
    m("eos minimum off by one", GEN, "and step >= MIN_FRAMES_BEFORE_EOS", "and step > MIN_FRAMES_BEFORE_EOS", ORACLE),
    m("eos threshold inclusive", GEN, "eos_logit > settings.eos_threshold", "eos_logit >= settings.eos_threshold - 1.0", ORACLE),
    m("eos fires again", GEN, "and eos_step is None\n", "\n", ORACLE),
    # Item 2: the default chunk size is pocket-tts's.
    m("default max_tokens 40", CHUNKING, "MAX_TOKENS_PER_CHUNK = 50", "MAX_TOKENS_PER_CHUNK = 40", ORACLE),
    m("default max_tokens 60", CHUNKING, "MAX_TOKENS_PER_CHUNK = 50", "MAX_TOKENS_PER_CHUNK = 60", ORACLE),
    m("options default max_tokens", OPTIONS, "max_tokens: int = MAX_TOKENS_PER_CHUNK", "max_tokens: int = 49", ORACLE),
    m("eos tail bonus", CHUNKING, "else prepared.frames_after_eos_guess + _EOS_TAIL_BONUS", "else prepared.frames_after_eos_guess + _EOS_TAIL_BONUS + 1", ORACLE),
    # Item 3: a period then a digit is a decimal only after a digit.
    m("decimal rule without the digit before", CHUNKING, "        and before[-2].isdigit()\n", "", CUTS),
    m("decimal rule without the digit after", CHUNKING, "        and after[0].isdigit()\n", "", CUTS),
    m("decimal rule without the period", CHUNKING, '        and before[-1] == "."\n', "", CUTS),
    # Item 8: clipping and peak normalisation.
    m("pcm16 not clipped", OUTPUT, "return np.round(_clipped(audio) * 32767.0)", "return np.round(np.asarray(audio, np.float32) * 32767.0)", LEVELS),
    m("float not clipped", OUTPUT, "return np.clip(np.asarray(block, np.float32), -1.0, 1.0)", "return np.asarray(block, np.float32)", LEVELS),
    m("clip one-sided", OUTPUT, "return np.clip(np.asarray(block, np.float32), -1.0, 1.0)", "return np.clip(np.asarray(block, np.float32), None, 1.0)", LEVELS),
    m("pcm16 scale 32768", OUTPUT, "_clipped(audio) * 32767.0", "_clipped(audio) * 32768.0", LEVELS),
    m("peak by max", POST, "peak = float(np.max(np.abs(audio)))", "peak = float(np.max(audio))", LEVELS),
    m("writer peak by max", OUTPUT, "self._peak = max(self._peak, float(np.abs(block).max()))", "self._peak = max(self._peak, float(block.max()))", LEVELS),
    m("writer peak of the first block", OUTPUT, "self._peak = max(self._peak, float(np.abs(block).max()))", "self._peak = self._peak or float(np.abs(block).max())", LEVELS),
    m("writer peak before the chain", OUTPUT, "            if self._chain is not None:\n                block = self._chain.process(block)\n", "", LEVELS),
    # Item 10: voice state shapes and offsets.
    m("batched voice state accepted", STATE, "or cache.shape[1] != 1", "or cache.shape[1] < 1", SHAPES),
    m("offset 0 accepted", STATE, "if not 0 < offset <= cache.shape[2]:", "if not 0 <= offset <= cache.shape[2]:", SHAPES),
    m("offset past the cache accepted", STATE, "if not 0 < offset <= cache.shape[2]:", "if not 0 < offset:", SHAPES),
    m("padding accepted", STATE, "        if pad != 0:\n", "        if pad > 1:\n", SHAPES),
    m("layers may disagree", STATE, "    if len(lengths) != 1 or len(shapes) != 1:\n", "    if False:\n", SHAPES),
    m("cache pair order", STATE, "keys.append(np.ascontiguousarray(valid[0]))", "keys.append(np.ascontiguousarray(valid[1]))", SHAPES),
    m("whole cache used", STATE, "valid = cache[:, 0, :offset].astype(np.float32)", "valid = cache[:, 0].astype(np.float32)", SHAPES),
)  # fmt: skip


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
    args = parser.parse_args()
    chosen = [mu for mu in MUTATIONS if args.k in mu.name]
    if args.list:
        for mu in chosen:
            print(f"{mu.name}: {mu.path} -> {' '.join(mu.tests)}")
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
            path = scratch / mu.path
            text = path.read_text(encoding="utf-8")
            if text.count(mu.old) != 1:
                stale.append(mu)
                print(f"STALE     {mu.name}: its line occurs {text.count(mu.old)} times in {mu.path}")
                continue
            path.write_text(text.replace(mu.old, mu.new), encoding="utf-8")
            start = time.monotonic()
            try:
                result = _pytest(scratch, mu.tests)
            finally:
                path.write_text(text, encoding="utf-8")
            seconds = time.monotonic() - start
            if result.returncode == 0:
                survived.append(mu)
                print(f"SURVIVED  {mu.name} ({seconds:.0f} s)")
            else:
                caught.append(mu)
                failed = [line for line in result.stdout.splitlines() if line.startswith("FAILED")]
                how = failed[0].removeprefix("FAILED ") if failed else f"exit {result.returncode}"
                print(f"caught    {mu.name} ({seconds:.0f} s): {how[:110]}")
        print(
            f"{len(chosen)} mistakes tried: {len(caught)} caught, {len(survived)} survived,"
            f" {len(stale)} stale"
        )
        return 0 if not survived and not stale else 1


if __name__ == "__main__":
    sys.exit(main())
