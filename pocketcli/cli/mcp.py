"""``pockettts mcp``: speech as tools for coding agents and desktop assistants (MCP, stdio)."""

from __future__ import annotations

from pathlib import Path

import typer

from pocketcli import defaults
from pocketcli.cli import checks, flags
from pocketcli.cli.model_options import MODEL, ModelFlags, takes_model_flags
from pocketcli.cli.serve import (
    SERVER_MODEL_FLAGS,
    backend_loader,
    check_log_level,
    log_level_option,
    max_queue_option,
    max_streams_option,
    request_timeout_option,
    voice_dir_option,
)
from pocketcli.serve.settings import MAXIMA

HELP = """Serve speech as Model Context Protocol tools on standard input/output:
speak (on this machine's speakers), stop_speaking, status, list_voices and
synthesize (the audio back to the caller as WAV). An MCP client starts it.

Examples:

  pockettts mcp

  pockettts mcp --language french --output-dir ~/Music/speech

In the client's configuration (Claude Desktop, Cursor, ...):

  {"mcpServers": {"pockettts": {"command": "pockettts", "args": ["mcp"]}}}
"""


@takes_model_flags(only=SERVER_MODEL_FLAGS)
def mcp_command(
    model: ModelFlags = MODEL,
    voice: str | None = flags.voice("Default built-in voice (default: the language's own)."),
    voice_file: Path | None = flags.voice_file(),
    voice_dir: Path | None = voice_dir_option(),
    output_dir: Path | None = typer.Option(
        None,
        "--output-dir",
        metavar="DIR",
        help="Folder synthesize may write files into (default: it writes none).",
    ),
    device: str | None = typer.Option(
        None, "--device", metavar="DEV", help="Sound output device for speak (number or name)."
    ),
    max_chars: int = typer.Option(
        defaults.MAX_CHARS,
        "--max-chars",
        metavar="N",
        min=1,
        max=MAXIMA["max_chars"],
        help="Text per call.",
    ),
    max_streams: int = max_streams_option("Syntheses"),
    max_queue: int = max_queue_option("Syntheses"),
    request_timeout: float = request_timeout_option("synthesis"),
    log_level: str = log_level_option(),
) -> None:
    from pocketcli.mcp import require_extra

    require_extra()
    # SIGTERM and Ctrl-C are how a server stops: quiet from the start (QUIET_COMMANDS).
    from pocketcli.audio.playback import parse_device
    from pocketcli.frontends import logs
    from pocketcli.frontends.admission import AdmissionLimits
    from pocketcli.mcp.server import McpSettings, run

    level = check_log_level(log_level)
    if output_dir is not None and not output_dir.is_dir():
        raise checks.PathError(f"--output-dir is not a folder: {output_dir}")
    load = backend_loader(model, voice, voice_file, voice_dir)
    logs.configure(level)
    backend = load()
    logs.logger().info("ready", extra={"voice": backend.default_voice_name, "transport": "stdio"})
    settings = McpSettings(
        voice_dir=voice_dir,
        output_dir=output_dir,
        max_chars=max_chars,
        device=parse_device(device),
        admission=AdmissionLimits(max_streams, max_queue, request_timeout),
    )
    run(backend, settings)
