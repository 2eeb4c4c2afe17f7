"""The shape rules, everywhere (issue 31): no function in pocketcli/ has a body over 80
lines, and complexity is held to 15 by ruff's C901 with no file excepted (pyproject.toml;
checked here too, so a per-file ignore cannot slip back in); none in pocketcli/engine/ is
over 50 lines or complexity 12. Declarations are signatures: they do not count."""

from __future__ import annotations

import ast
import subprocess
import sys

from tests.support.paths import PACKAGE

MAX_BODY_LINES = 80
MAX_COMPLEXITY = 15


def _ruff_complexity(place, limit: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--isolated", "--select", "C901",
         "--config", f"lint.mccabe.max-complexity={limit}", "--output-format", "concise",
         str(place)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_no_function_body_in_the_package_is_over_80_lines() -> None:
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 150  # the walk found the package
    assert _long_bodies(files, MAX_BODY_LINES) == [], "split these into functions"


def test_no_function_in_the_package_is_above_complexity_15() -> None:
    r = _ruff_complexity(PACKAGE, MAX_COMPLEXITY)
    assert r.returncode == 0, r.stdout + r.stderr


# The engine (issue 31): every function short and plain enough to read at once.
ENGINE_MAX_BODY_LINES = 50
ENGINE_MAX_COMPLEXITY = 12


def _long_bodies(files: list, limit: int) -> list[str]:
    long = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                body = node.end_lineno - node.body[0].lineno + 1
                if body > limit:
                    long.append(
                        f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name} ({body} lines)"
                    )
    return long


def test_no_engine_function_is_over_50_lines_or_complexity_12() -> None:
    files = sorted((PACKAGE / "engine").glob("*.py"))
    assert len(files) >= 5  # the walk found the package
    assert _long_bodies(files, ENGINE_MAX_BODY_LINES) == []
    r = _ruff_complexity(PACKAGE / "engine", ENGINE_MAX_COMPLEXITY)
    assert r.returncode == 0, r.stdout + r.stderr
