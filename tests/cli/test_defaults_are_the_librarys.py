"""Every default is decided once (``pocketcli/defaults.py`` and the library types that read
it), and the CLI declares the library's values, so a copy cannot drift.

Every option of every command that declares a default (other than none, off or an
empty list) must be listed here with the library value it stands for; a new literal
default in the CLI fails until it is tied to the library's.
"""

from __future__ import annotations

import inspect
from typing import Any

import click
import pytest
import typer.main

from pocketcli import defaults
from pocketcli.cli.main import app
from pocketcli.cli.model_options import BACKENDS
from pocketcli.config import DEFAULT_TEMPERATURE
from pocketcli.frontends import logs
from pocketcli.normalize import parse_markup
from pocketcli.normalize.pipeline import normalize_text
from pocketcli.options import ModelRequest, SpeakOptions
from pocketcli.serve.rayserve import Scaling
from pocketcli.serve.settings import Limits, ServeSettings


def _default(function: Any, name: str) -> Any:
    return inspect.signature(function).parameters[name].default


LIMITS = Limits()
LOG_LEVEL = _default(logs.configure, "level")
SERVE = {
    "host": defaults.SERVE_HOST,
    "port": defaults.SERVE_PORT,
    "log_level": LOG_LEVEL,
    "max_queue": LIMITS.max_queue,
    "max_streams": LIMITS.max_streams,
    "max_chars": LIMITS.max_chars,
    "max_upload_mb": LIMITS.max_upload_bytes / 2**20,
    "max_clone_seconds": LIMITS.max_clone_seconds,
    "max_decoded_samples": LIMITS.max_decoded_samples,
    "request_timeout": LIMITS.request_seconds,
    "body_timeout": LIMITS.body_seconds,
    "header_timeout": LIMITS.header_seconds,
    "idle_timeout": LIMITS.idle_seconds,
    "max_connections": LIMITS.max_connections,
    "shutdown_timeout": ServeSettings().shutdown_seconds,
    "min_replicas": Scaling().min_replicas,
    "upscale_delay": Scaling().upscale_delay_s,
    "downscale_delay": Scaling().downscale_delay_s,
}


def _library_defaults() -> dict[tuple[str, str], Any]:
    """(command, option) -> the library's value that option's default must be."""
    wyoming = pytest.importorskip("pocketcli.wyoming.handler").WyomingLimits()
    mcp = pytest.importorskip("pocketcli.mcp.server").McpSettings()
    runtime = ModelRequest().runtime
    table = {(command, "model_runtime"): runtime for command in _commands()}
    table |= {("serve", option): value for option, value in SERVE.items()}
    table |= {
        ("tts", "backend"): BACKENDS[0],  # FluidAudio's flag: its first name is ours
        ("normalize", "language"): _default(parse_markup, "language"),
        ("normalize", "urls"): _default(normalize_text, "urls"),
        ("normalize", "emails"): _default(normalize_text, "emails"),
        ("benchmark", "corpus"): defaults.CORPUS,
        ("benchmark", "asr_backend"): defaults.ASR_BACKEND,
        ("wyoming", "uri"): defaults.WYOMING_URI,
        ("wyoming", "max_chars"): wyoming.max_chars,
        ("wyoming", "idle_timeout"): wyoming.idle_seconds,
        ("wyoming", "max_streams"): wyoming.admission.max_streams,
        ("wyoming", "max_queue"): wyoming.admission.max_queue,
        ("wyoming", "request_timeout"): wyoming.admission.request_seconds,
        ("wyoming", "log_level"): LOG_LEVEL,
        ("mcp", "max_chars"): mcp.max_chars,
        ("mcp", "max_streams"): mcp.admission.max_streams,
        ("mcp", "max_queue"): mcp.admission.max_queue,
        ("mcp", "request_timeout"): mcp.admission.request_seconds,
        ("mcp", "log_level"): LOG_LEVEL,
    }
    return table


def _commands() -> dict[str, click.Command]:
    group = typer.main.get_command(app)
    ctx = click.Context(group)
    found = {}
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if isinstance(command, click.Group):
            found |= {f"{name} {sub}": command.get_command(ctx, sub) for sub in command.commands}
        elif command is not None:
            found[name] = command
    return found


def _declared() -> dict[tuple[str, str], Any]:
    declared = {}
    for name, command in _commands().items():
        for param in command.params:
            default = param.default
            if default is None or isinstance(default, bool) or default in ((), []):
                continue
            declared[(name, param.name or "")] = default
    return declared


def test_every_declared_cli_default_is_the_librarys() -> None:
    library = _library_defaults()
    declared = _declared()
    untied = sorted(set(declared) - set(library))
    assert not untied, f"CLI defaults with no library value to read: {untied}"
    assert {k: declared[k] for k in declared} == {k: library[k] for k in declared}
    assert ("serve", "max_streams") in declared  # the table is really checked


def test_the_shared_decisions_are_one_value() -> None:
    """Defaults that several front ends share are the same decision."""
    wyoming = pytest.importorskip("pocketcli.wyoming.handler").WyomingLimits()
    mcp = pytest.importorskip("pocketcli.mcp.server").McpSettings()
    assert LIMITS.max_chars == wyoming.max_chars == mcp.max_chars == defaults.MAX_CHARS
    assert LIMITS.max_streams == wyoming.admission.max_streams == defaults.MAX_STREAMS
    assert (LIMITS.max_queue, LIMITS.request_seconds) == (
        wyoming.admission.max_queue,
        wyoming.admission.request_seconds,
    )
    assert ModelRequest().model_language == _default(parse_markup, "language") == defaults.LANGUAGE
    assert SpeakOptions().max_tokens == defaults.MAX_TOKENS
    assert DEFAULT_TEMPERATURE == defaults.TEMPERATURE


def test_cli_help_states_the_librarys_defaults() -> None:
    tts = _commands()["tts"]
    helps = {p.name: getattr(p, "help", "") or "" for p in tts.params}
    assert f"(default {defaults.TEMPERATURE:g}," in helps["temperature"]
    assert f"(default {SpeakOptions().max_tokens})" in helps["max_tokens"]
    assert f"(default {defaults.LANGUAGE})" in helps["model_language"]
