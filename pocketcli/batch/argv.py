"""``--ray [ADDRESS]``: an option whose value may be left out (click options cannot).

Kept free of heavy imports: it runs before every command is parsed.
"""

from __future__ import annotations

RAY_LOCAL = "local"


def bare_ray_means_local(argv: list[str]) -> list[str]:
    """``--ray`` with no address (last, or before another option) means ``--ray local``."""
    out: list[str] = []
    for index, arg in enumerate(argv):
        out.append(arg)
        if arg == "--":
            out.extend(argv[index + 1 :])
            break
        if arg == "--ray" and (index + 1 == len(argv) or argv[index + 1].startswith("-")):
            out.append(RAY_LOCAL)
    return out
