"""``--ray [ADDRESS]``: an option whose value may be left out (click options cannot); the
one mechanism for such options (``--words``/``--captions`` use it too).

Kept free of heavy imports: it runs before every command is parsed.
"""

from __future__ import annotations

RAY_LOCAL = "local"


def fill_bare_options(argv: list[str], bare: dict[str, str], kept: str = "") -> list[str]:
    """Each option of ``bare`` given with no value (last, or before another option) gets
    its value there (``kept``: a value starting with "-" that is still a value)."""
    out: list[str] = []
    for index, arg in enumerate(argv):
        out.append(arg)
        if arg == "--":
            out.extend(argv[index + 1 :])
            break
        if arg in bare:
            following = argv[index + 1] if index + 1 < len(argv) else None
            if following is None or (following.startswith("-") and following != kept):
                out.append(bare[arg])
    return out


def bare_ray_means_local(argv: list[str]) -> list[str]:
    """``--ray`` with no address (last, or before another option) means ``--ray local``."""
    return fill_bare_options(argv, {"--ray": RAY_LOCAL})
