"""The command-line front end only maps flags to library calls: no function in
pocketcli/cli/ has a body over 80 lines (its complexity is held to 15 by ruff's
C901, pyproject.toml). Declarations are signatures, so they do not count."""

from __future__ import annotations

import ast
from pathlib import Path

CLI = Path(__file__).resolve().parent.parent / "pocketcli" / "cli"
MAX_BODY_LINES = 80


def test_no_cli_function_body_is_over_80_lines() -> None:
    long = []
    files = sorted(CLI.glob("*.py"))
    assert len(files) > 10  # the walk found the package
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                body = node.end_lineno - node.body[0].lineno + 1
                if body > MAX_BODY_LINES:
                    long.append(f"{path.name}:{node.lineno} {node.name} ({body} lines)")
    assert long == [], "split these into functions that each do one thing"
