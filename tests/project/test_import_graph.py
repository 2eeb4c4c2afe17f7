"""No import cycles in the package, between modules or between its subpackages.

Every import counts: module-level, inside functions (where the cycle only
bites at run time) and under ``if TYPE_CHECKING:`` (a cycle in the types is
a cycle in the design, even when Python never runs it). The team's
tools/import_cycles.py skips the typing-only ones; this check is stricter and
written here so a clone needs nothing beside it.
"""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

from tests.support.paths import PACKAGE


def _module(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(path: Path, module: str) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".")
                parts = parts if path.name == "__init__.py" else parts[:-1]
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def _graph(unit) -> dict[str, set[str]]:
    files = {_module(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        deps = {
            d
            for d in _imported(path, module)
            if d in files and d != module and not module.startswith(d + ".")
        }
        graph.setdefault(unit(module), set()).update(
            unit(d) for d in deps if unit(d) != unit(module)
        )
    return graph


@pytest.mark.parametrize(
    "what, unit",
    [
        ("modules", lambda m: m),
        ("subpackages", lambda m: ".".join(m.split(".")[:2])),
    ],
)
def test_no_import_cycles(what, unit) -> None:
    graph = _graph(unit)
    assert len(graph) > 10  # the walk found the package
    try:
        tuple(TopologicalSorter(graph).static_order())
    except CycleError as exc:
        pytest.fail(f"import cycle between {what}: {' -> '.join(exc.args[1])}")


def test_the_check_sees_a_cycle() -> None:
    with pytest.raises(CycleError):
        tuple(TopologicalSorter({"a": {"b"}, "b": {"a"}}).static_order())


def test_no_test_only_code_in_the_package() -> None:
    names = {p.name for p in PACKAGE.rglob("*.py")}
    assert not {n for n in names if "twin" in n or n == "onnx_predictor.py"}
