"""Names a package exports but imports on first use (so ``--help`` loads no runtime)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def exports(
    package: str, names: Mapping[str, str], relative: bool = True
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``: ``names`` maps each name
    to the module that defines it (a submodule of ``package`` when ``relative``)."""

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{module}" if relative else module), name)

    def __dir__() -> list[str]:
        return sorted(names)

    return __getattr__, __dir__
