"""The front ends only map flags and requests to library calls: no function in
pocketcli/cli/, pocketcli/serve/ or pocketcli/frontends/ has a body over 80 lines
(complexity is held to 15 by ruff's C901, pyproject.toml). Declarations are
signatures: they do not count."""

from __future__ import annotations

import ast

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
