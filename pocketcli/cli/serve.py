"""``pockettts serve``: the model behind HTTP (OpenAI's speech API, pocket-tts's /tts, a page)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from pocketcli.cli import checks, flags
from pocketcli.cli import clickcompat as click

if TYPE_CHECKING:
    from pocketcli.serve.backend import Backend

HELP = """Serve speech over HTTP: OpenAI's POST /v1/audio/speech, pocket-tts's POST /tts
and a page at / to listen. Binds to 127.0.0.1 unless --host says otherwise.

Examples:

  pockettts serve                                   (english, http://127.0.0.1:8000)

  pockettts serve --language spanish --precision int8 --voice lola

  pockettts serve --voice-dir ./voices --api-key "$KEY" --host 0.0.0.0

  curl -s localhost:8000/v1/audio/speech -H 'Content-Type: application/json' \\
    -d '{"model": "tts-1", "input": "Hello.", "voice": "alba", "response_format": "wav"}' -o hi.wav
"""


def voice_dir_option() -> Any:
    return typer.Option(
        None, "--voice-dir", metavar="DIR", help="Folder of voice files requests may name."
    )


def log_level_option() -> Any:
    return typer.Option(
        "info", "--log-level", metavar="LEVEL", help="debug, info, warning or error."
    )


def check_log_level(log_level: str) -> str:
    if log_level.lower() not in ("debug", "info", "warning", "error"):
        raise click.BadParameter(
            f"{log_level!r}; choose debug, info, warning or error", param_hint="--log-level"
        )
    return log_level.lower()


def backend_loader(
    language: str | None,
    runtime: str,
    precision: str | None,
    voice: str | None,
    voice_file: Path | None,
    voice_dir: Path | None,
    model_dir: Path | None,
    config: str | None,
    offline: bool,
) -> Callable[[], Backend]:
    """Checks the model and voice flags every server takes (serve, wyoming, mcp) before
    anything loads; returns what loads the model and its default voice."""
    from pocketcli.cli.model_options import (
        check_voice_name,
        names_voices_inside,
        validate_choice,
    )
    from pocketcli.serve.backend import load_backend

    checks.voice_file(voice_file, voice)
    if voice_dir is not None and voice_dir.exists() and not voice_dir.is_dir():
        raise checks.PathError(f"--voice-dir is a file, not a folder: {voice_dir}")
    if voice_dir is not None and not voice_dir.is_dir():
        raise checks.PathError(f"voice folder not found: {voice_dir}")
    picks_inside = names_voices_inside(voice_file)  # -v names a voice of a voices.bin
    if voice is not None and voice_file is not None and not picks_inside:
        raise click.UsageError("--voice and --voice-file both name the default voice: keep one")
    choice = validate_choice(
        model_dir, language, config, runtime, precision, offline=offline, quiet=True
    )
    if not picks_inside:
        check_voice_name(choice, voice)
    return lambda: load_backend(choice, voice, voice_file)


def serve_command(
    host: str = typer.Option(
        "127.0.0.1", "--host", metavar="ADDR", help="Address to bind (loopback by default)."
    ),
    port: int = typer.Option(
        8000, "--port", metavar="PORT", min=0, max=65535, help="Port (0: any free one)."
    ),
    language: str | None = flags.language(),
    runtime: str = flags.runtime(),
    precision: str | None = flags.precision(),
    voice: str | None = flags.voice("Default built-in voice (default: the language's own)."),
    voice_file: Path | None = flags.voice_file(),
    voice_dir: Path | None = voice_dir_option(),
    model_dir: Path | None = flags.model_dir(),
    config: str | None = flags.config(),
    offline: bool = flags.offline(),
    api_key: str | None = typer.Option(
        None,
        "--api-key",
        metavar="KEY",
        envvar="POCKETTTS_API_KEY",
        show_envvar=True,
        help="Require this key (Authorization: Bearer KEY, or X-API-Key).",
    ),
    cors_origin: list[str] | None = typer.Option(
        None,
        "--cors-origin",
        metavar="ORIGIN",
        help="Let web pages on this origin call the API (e.g. http://localhost:3000). Repeatable.",
    ),
    max_queue: int = typer.Option(
        4, "--max-queue", metavar="N", min=0, help="Requests waiting for the model; more get 503."
    ),
    max_chars: int = typer.Option(
        4096, "--max-chars", metavar="N", min=1, help="Text per request."
    ),
    max_upload_mb: float = typer.Option(
        10.0, "--max-upload-mb", metavar="MB", min=0.01, help="Size of a recording to clone."
    ),
    max_clone_seconds: float = typer.Option(
        60.0, "--max-clone-seconds", metavar="S", min=1.0, help="Length of a recording to clone."
    ),
    request_timeout: float = typer.Option(
        300.0,
        "--request-timeout",
        metavar="S",
        min=1.0,
        help="Seconds per request, queue wait included.",
    ),
    shutdown_timeout: float = typer.Option(
        10.0,
        "--shutdown-timeout",
        metavar="S",
        min=0.0,
        help="On SIGTERM: seconds in-flight requests get to finish before they are cancelled.",
    ),
    log_level: str = log_level_option(),
) -> None:
    from pocketcli.serve import require_extra

    require_extra()
    from pocketcli.serve.limits import Limits, ServeSettings

    check_log_level(log_level)
    load = backend_loader(
        language, runtime, precision, voice, voice_file, voice_dir, model_dir, config, offline
    )
    settings = ServeSettings(
        limits=Limits(
            max_chars=max_chars,
            max_upload_bytes=int(max_upload_mb * 2**20),
            max_clone_seconds=max_clone_seconds,
            max_queue=max_queue,
            request_seconds=request_timeout,
        ),
        api_key=api_key or None,
        voice_dir=voice_dir,
        shutdown_seconds=shutdown_timeout,
        cors_origins=tuple(cors_origin or ()),
    )
    from pocketcli.serve import logs
    from pocketcli.serve.server import run

    if not api_key and host not in ("127.0.0.1", "localhost", "::1"):
        logs.configure(log_level.lower())
        logs.logger().warning(
            "listening beyond this machine without --api-key: anyone who reaches it can use it",
            extra={"host": host},
        )
    run(load, settings, host, port, log_level.lower())
