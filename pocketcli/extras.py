"""Optional extras: one line naming what to install when a front end's library is missing.

``pip install pockettts`` brings none of the servers' libraries; each front
end asks for its own (``serve``, ``wyoming``, ``mcp``) before it imports them.
"""

from __future__ import annotations

import importlib

from pocketcli.errors import UserError


def require(what: str, extra: str, modules: tuple[str, ...]) -> None:
    """Raises one ``UserError`` naming the missing modules and the extra to install."""
    missing = []
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(module)
    if missing:
        names = ", ".join(m.replace("_", "-") for m in missing)
        raise UserError(f"{what} needs {names}: install them with pip install 'pockettts[{extra}]'")
