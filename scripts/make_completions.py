"""Regenerates completions/ (bash, zsh, fish) from the CLI; a test checks they are current.

python scripts/make_completions.py
"""

from __future__ import annotations

from pathlib import Path

from pocketcli.cli.completion import SHELLS, completion_script

FILES = {"bash": "pockettts.bash", "zsh": "_pockettts", "fish": "pockettts.fish"}


def main() -> None:
    out = Path(__file__).resolve().parent.parent / "completions"
    out.mkdir(exist_ok=True)
    for shell in SHELLS:
        (out / FILES[shell]).write_text(completion_script(shell) + "\n", encoding="utf-8")
        print(f"wrote {out / FILES[shell]}")


if __name__ == "__main__":
    main()
