"""``pockettts completion SHELL``: the shell completion script.

The scripts call back into pockettts (typer's completion protocol), so they
always complete the installed version's subcommands, flags and values; the
copies in completions/ are generated from this very function.
"""

from __future__ import annotations

import typer

from pocketcli.cli import clickcompat as click
from pocketcli.cli import flags

SHELLS = ("bash", "zsh", "fish")
COMPLETE_VAR = "_POCKETTTS_COMPLETE"

HELP = """Print the completion script for a shell.

Examples:

  pockettts completion bash > ~/.local/share/bash-completion/completions/pockettts

  pockettts completion zsh > "${fpath[1]}/_pockettts"

  pockettts completion fish > ~/.config/fish/completions/pockettts.fish
"""


def completion_script(shell: str) -> str:
    from typer.completion import get_completion_script

    return get_completion_script(prog_name="pockettts", complete_var=COMPLETE_VAR, shell=shell)


def completion_command(
    shell: str = typer.Argument(
        ..., help="bash, zsh or fish.", autocompletion=flags.complete_from(SHELLS)
    ),
) -> None:
    shell = shell.strip().lower()
    if shell not in SHELLS:
        raise click.BadParameter(f"{shell!r}; choose from {', '.join(SHELLS)}", param_hint="SHELL")
    typer.echo(completion_script(shell))
