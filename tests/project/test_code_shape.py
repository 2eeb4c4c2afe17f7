"""The front ends only map flags and requests to library calls: no function in
pocketcli/cli/, pocketcli/serve/ or pocketcli/frontends/ has a body over 80 lines
(complexity is held to 15 by ruff's C901, pyproject.toml); none in pocketcli/engine/ is
over 50 lines or complexity 12. Declarations are signatures: they do not count."""

from __future__ import annotations

import ast
import subprocess
import sys

from tests.support.paths import PACKAGE

MAX_BODY_LINES = 80


def test_no_front_end_function_body_is_over_80_lines() -> None:
    long = []
    files = sorted(
        [
            *(PACKAGE / "cli").glob("*.py"),
            *(PACKAGE / "serve").rglob("*.py"),
            *(PACKAGE / "frontends").glob("*.py"),
        ]
    )
    assert len(files) > 20  # the walk found the packages
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                body = node.end_lineno - node.body[0].lineno + 1
                if body > MAX_BODY_LINES:
                    long.append(
                        f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name} ({body} lines)"
                    )
    assert long == [], "split these into functions that each do one thing"


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
    config = f"lint.mccabe.max-complexity={ENGINE_MAX_COMPLEXITY}"
    r = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--isolated", "--select", "C901",
         "--config", config, "--output-format", "concise", str(PACKAGE / "engine")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
