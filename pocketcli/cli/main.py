"""The ``pockettts`` command: subcommands and the one place errors become exit codes.

Exit status: 0 success, 1 runtime failure, 2 usage error, 130 Ctrl-C,
143 SIGTERM, 128 + N for the other signals that end a process. Every
failure is a single line on stderr; a traceback only with POCKETTTS_DEBUG=1.
"""

from __future__ import annotations

import os
import sys

import typer

from pocketcli import __version__
from pocketcli.cli import (
    benchmark,
    clone,
    completion,
    download,
    export,
    flags,
    inspect,
    mcp,
    normalize,
    serve,
    tts,
    voices,
    wyoming,
)
from pocketcli.cli import clickcompat as click
from pocketcli.cli.signals import exit_for_signal
from pocketcli.cli.stdio import STDOUT_GONE_STATUS, StandardOutputGone, drop_stdout
from pocketcli.cli.store_options import help_text
from pocketcli.errors import UserError
from pocketcli.interrupts import (
    Terminated,
    exit_status,
    install_signal_handlers,
    quiet_stop,
    stop_quietly_for,
    stop_word,
    stopped_by,
)

app = typer.Typer(
    name="pockettts",
    help=help_text(
        "Speak text with Kyutai's Pocket TTS.\n\n"
        "Examples:\n\n"
        '  pockettts tts "Hello world." -o hello.wav --model-dir ./pack\n\n'
        '  echo "Read from a pipe." | pockettts tts -o piped.wav --model-dir ./pack'
    ),
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # help as written: "[pause:1s]" is an example, not markup
    context_settings={"help_option_names": ["-h", "--help"]},
)
COMMANDS = (
    ("tts", tts.HELP, tts.tts_command),
    ("normalize", normalize.HELP, normalize.normalize_command),
    ("completion", completion.HELP, completion.completion_command),
    ("benchmark", benchmark.HELP, benchmark.benchmark_command),
    ("corpus", benchmark.CORPUS_HELP, benchmark.corpus_command),
    ("download", download.HELP, download.download_command),
    ("export", export.HELP, export.export_command),
    ("voices", voices.HELP, voices.voices_command),
    ("clone", clone.HELP, clone.clone_command),
    ("inspect", inspect.HELP, inspect.inspect_command),
    ("serve", serve.HELP, serve.serve_command),
    ("wyoming", wyoming.HELP, wyoming.wyoming_command),
    ("mcp", mcp.HELP, mcp.mcp_command),
)
for _name, _help, _command in COMMANDS:
    app.command(_name, help=help_text(_help), no_args_is_help=False)(_command)

HELP_COMMAND = "help"
_COMPLETE_COMMAND = flags.complete_from(tuple(name for name, _, _ in COMMANDS))


@app.command(HELP_COMMAND, help="The help of pockettts, or of a command: pockettts help tts.")
def _help_command(
    command: list[str] | None = typer.Argument(
        None, metavar="[COMMAND]", autocompletion=_COMPLETE_COMMAND
    ),
) -> None:
    """Never runs: ``run`` reads ``help X`` as ``X --help`` (so it is the same text)."""


def help_as_flag(argv: list[str]) -> list[str]:
    """``pockettts help [COMMAND]`` is ``pockettts [COMMAND] --help``."""
    if argv[:1] == [HELP_COMMAND]:
        return [*argv[1:], "--help"]
    return argv


def _version(value: bool) -> None:
    if value:
        typer.echo(f"pockettts {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Speak text with Kyutai's Pocket TTS."""


COMPLETE_VAR = completion.COMPLETE_VAR


def fail(message: str, code: int) -> None:
    sys.stderr.write(f"pockettts: error: {message}\n")
    sys.stderr.flush()
    raise SystemExit(code)


def run(argv: list[str] | None = None) -> None:
    """Console-script entry point."""
    install_signal_handlers()
    if COMPLETE_VAR in os.environ:
        from typer.completion import completion_init

        completion_init()  # registers bash/zsh/fish for the completion protocol
    debug = os.environ.get("POCKETTTS_DEBUG") == "1"
    from pocketcli.batch.argv import bare_ray_means_local
    from pocketcli.cli.word_flags import bare_word_flags

    argv = sys.argv[1:] if argv is None else argv
    argv = help_as_flag(bare_word_flags(bare_ray_means_local(argv)))
    stop_quietly_for(argv)
    try:
        result = app(
            args=argv, prog_name="pockettts", standalone_mode=False, complete_var=COMPLETE_VAR
        )
    except BaseException as exc:
        if not isinstance(exc, SystemExit):
            exit_for_signal()
        _report(exc, debug, sys.argv[1:] if argv is None else argv)
    exit_for_signal()
    raise SystemExit(result if isinstance(result, int) else 0)


MAX_MESSAGE_CHARS = 300  # a usage error quotes the command line: bounded, not all of it


def _usage(exc: click.UsageError, argv: list[str]) -> None:
    """A usage error is two lines: what is wrong, and where help is (exit 2)."""
    if isinstance(exc, click.NoArgsIsHelpError):
        exc.show()  # the help itself
        raise SystemExit(2)
    ctx = exc.ctx
    if ctx is not None:
        command = ctx.command_path
    else:  # an option's missing value: click gives no context; the subcommand has the help
        names = {c.name for c in app.registered_commands}
        command = " ".join(["pockettts", *[a for a in argv[:1] if a in names]])
    message = " ".join(exc.format_message().split())  # one line, whatever the message
    message += _other_tools_command(message, argv)
    message += _text_taken_for_an_option(exc, argv, command)
    # It may quote what was typed (unquoted text...); not a list of valid names (whole).
    if len(message) > MAX_MESSAGE_CHARS and not getattr(exc, "whole", False):
        shown = message[: MAX_MESSAGE_CHARS - 40].rstrip()
        message = f"{shown} ... ({len(message)} characters; quote a text of several words)"
    sys.stderr.write(f"pockettts: error: {message}\n")
    sys.stderr.write(f"pockettts: hint: '{command} --help' lists the options and values\n")
    sys.stderr.flush()
    raise SystemExit(2)


def _other_tools_command(message: str, argv: list[str]) -> str:
    """A pointer from another tool's command (Kyutai's ``generate``) to ours."""
    from pocketcli.cli.habits import OTHER_COMMANDS

    ours = OTHER_COMMANDS.get(argv[0]) if argv and message.startswith("No such command") else None
    if ours is None:
        return ""
    return f" Kyutai's `pocket-tts {argv[0]}` is `pockettts {ours}` here (its flags work too)."


def _text_taken_for_an_option(exc: click.UsageError, argv: list[str], command: str) -> str:
    """How to give a text that starts with '-' ("-5 degrees"), which the parser took for
    an option: a word with a space, a number or a rule of dashes is no option."""
    name = getattr(exc, "option_name", None)
    if not isinstance(exc, click.NoSuchOption) or not name:
        return ""
    text = next((a for a in argv if a.startswith(name) and _looks_like_text(a)), None)
    if text is None:
        return ""
    shown = text if len(text) <= 40 else text[:37] + "..."
    if command.endswith(" tts"):
        way = f"give it with --text: --text '{shown}'"
    else:
        way = f"put it last, after --: {command} [OPTIONS] -- '{shown}'"
    return f" (a text that starts with '-' is read as an option; {way})"


def _looks_like_text(arg: str) -> bool:
    return (
        any(c.isspace() for c in arg)
        or arg.lstrip("-")[:1] in tuple("0123456789.")
        or (arg.startswith("---"))
    )


def _library_error(exc: UserError, debug: bool, argv: list[str]) -> None:
    """A library error in the user's words (flags, not fields): a usage error
    (exit 2, with the hint line) or one line and exit 1, as the error says."""
    from pocketcli.cli.store_options import usage_error

    if exc.exit_code == 2:
        _usage(usage_error(exc), argv)
    if debug:
        raise exc
    from pocketcli.cli.flags import in_flags

    fail(in_flags(exc), exc.exit_code)


def _report(exc: BaseException, debug: bool, argv: list[str] | None = None) -> None:
    """Turns any exception into the right exit status and one line on stderr."""
    try:
        raise exc
    except click.Exit as exc:
        raise SystemExit(exc.exit_code) from None
    except click.UsageError as exc:
        _usage(exc, argv or [])
    except click.ClickException as exc:
        fail(exc.format_message(), exc.exit_code)
    except (click.Abort, KeyboardInterrupt, Terminated) as exc:
        if quiet_stop():  # tts's or a server's normal stop: only the exit status says it
            raise SystemExit(exit_status() if stopped_by else 130) from None
        if isinstance(exc, Terminated):
            fail(stop_word(), exit_status())
        fail("interrupted", 130)
    except UserError as exc:  # every library error says its exit status (errors.py)
        _library_error(exc, debug, argv or [])
    except StandardOutputGone:  # a reader gone (``| head``): quiet, as Unix tools end
        drop_stdout()
        raise SystemExit(STDOUT_GONE_STATUS) from None
    except OSError as exc:
        if debug:
            raise
        fail(f"{exc.strerror or exc}{f': {exc.filename}' if exc.filename else ''}", 1)
    except Exception as exc:  # a bug: still one line unless debugging
        if debug:
            raise
        fail(f"{type(exc).__name__}: {exc} (set POCKETTTS_DEBUG=1 for details)", 1)


if __name__ == "__main__":
    run()
