"""``pockettts serve``: the model behind HTTP (OpenAI's speech API, pocket-tts's /tts, a page)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from pocketcli import defaults
from pocketcli.cli import checks, flags
from pocketcli.cli import clickcompat as click
from pocketcli.cli.model_options import MODEL, ModelFlags, takes_model_flags
from pocketcli.serve.settings import MAXIMA as _MAX
from pocketcli.serve.settings import Limits, ServeSettings

LIMITS = Limits()  # the defaults of the limit flags
SETTINGS = ServeSettings()
MB = 2**20

if TYPE_CHECKING:
    from pocketcli.frontends.backend import Backend
    from pocketcli.options import ModelRequest

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


def max_queue_option(what: str = "Requests") -> Any:
    """``--max-queue``: every server front end's, with one default and one maximum."""
    return typer.Option(
        LIMITS.max_queue,
        "--max-queue",
        metavar="N",
        min=0,
        max=_MAX["max_queue"],
        help=f"{what} waiting for the model; more are refused as busy.",
    )


def max_streams_option(what: str = "Requests") -> Any:
    return typer.Option(
        LIMITS.max_streams,
        "--max-streams",
        metavar="N",
        min=1,
        max=_MAX["max_streams"],
        help=f"{what} spoken at once (rows of one batch); more wait in the queue.",
    )


def request_timeout_option(what: str = "request") -> Any:
    return typer.Option(
        LIMITS.request_seconds,
        "--request-timeout",
        metavar="S",
        min=1.0,
        max=_MAX["request_seconds"],
        help=f"Seconds per {what}, queue wait included.",
    )


LOG_LEVELS = ("debug", "info", "warning", "error")


def log_level_option() -> Any:
    return typer.Option(
        defaults.LOG_LEVEL,
        "--log-level",
        metavar="LEVEL",
        help="debug, info, warning or error.",
        autocompletion=flags.complete_from(LOG_LEVELS),
    )


def _key_not_blank(value: str | None) -> str | None:
    """``--api-key ""`` (a variable that was not set) would serve with no key at all."""
    if value is not None and not value.strip():
        raise click.BadParameter(
            "the key is empty (an unset variable?): give a key, or leave --api-key out",
            param_hint="--api-key",
        )
    return value


def check_log_level(log_level: str) -> str:
    if log_level.lower() not in LOG_LEVELS:
        raise click.BadParameter(
            f"{log_level!r}; choose debug, info, warning or error", param_hint="--log-level"
        )
    return log_level.lower()


def backend_loader(
    model: ModelFlags, voice: str | None, voice_file: Path | None, voice_dir: Path | None
) -> Callable[[], Backend]:
    """Checks the model and voice flags every server takes (serve, wyoming, mcp) before
    anything loads; returns what loads the model and its default voice."""
    from pocketcli.frontends.backend import load_backend

    choice = checked_model_request(model, voice, voice_file, voice_dir)
    return lambda: load_backend(choice, voice, voice_file)


def checked_model_request(
    model: ModelFlags, voice: str | None, voice_file: Path | None, voice_dir: Path | None
) -> ModelRequest:
    """The model and voice flags checked; the request that loads the model."""
    from pocketcli.cli.model_options import check_voice_name, names_voices_inside

    checks.voice_file(voice_file, voice)
    if voice_dir is not None and voice_dir.exists() and not voice_dir.is_dir():
        raise checks.PathError(f"--voice-dir is a file, not a folder: {voice_dir}")
    if voice_dir is not None and not voice_dir.is_dir():
        raise checks.PathError(f"voice folder not found: {voice_dir}")
    picks_inside = names_voices_inside(voice_file)  # -v names a voice of a voices.bin
    if voice is not None and voice_file is not None and not picks_inside:
        raise click.UsageError("--voice and --voice-file both name the default voice: keep one")
    choice = model.request(quiet=True)
    if not picks_inside:
        check_voice_name(choice, voice)
    return choice


def absolute_for_ray(
    choice: ModelRequest, voice_file: Path | None, settings: ServeSettings
) -> tuple[ModelRequest, Path | None, ServeSettings]:
    """The user's paths (--model-dir, --config, --voice-file, --voice-dir) made absolute
    for ``serve --ray``: a replica runs in Ray's worker folder (or on another node), where
    a path relative to this command's folder names nothing, or something else. A local
    --config that is not there is said here, in one line, not by every replica."""
    from dataclasses import replace

    from pocketcli.batch.cluster import absolute, absolute_request
    from pocketcli.store.fetch import is_remote

    config = choice.config
    if config is not None and not is_remote(config):
        checks.readable_file(config, "config")
    voice_dir = absolute(settings.voice_dir)
    return (
        absolute_request(choice),
        absolute(voice_file),
        replace(settings, voice_dir=voice_dir),
    )


SERVER_MODEL_FLAGS = ("language", "runtime", "precision", "model_dir", "config", "offline")


@takes_model_flags(only=SERVER_MODEL_FLAGS)
def serve_command(
    host: str = typer.Option(
        defaults.SERVE_HOST, "--host", metavar="ADDR", help="Address to bind (loopback by default)."
    ),
    port: int = typer.Option(
        defaults.SERVE_PORT,
        "--port",
        metavar="PORT",
        min=0,
        max=65535,
        help="Port (0: any free one).",
    ),
    model: ModelFlags = MODEL,
    voice: str | None = flags.voice(
        "Default built-in voice (default: the language's own).", "--default-voice"
    ),
    voice_file: Path | None = flags.voice_file(),
    voice_dir: Path | None = voice_dir_option(),
    api_key: str | None = typer.Option(
        None,
        "--api-key",
        metavar="KEY",
        envvar="POCKETTTS_API_KEY",
        show_envvar=True,
        callback=_key_not_blank,
        help="Require this key (Authorization: Bearer KEY, or X-API-Key).",
    ),
    cors_origin: list[str] | None = typer.Option(
        None,
        "--cors-origin",
        metavar="ORIGIN",
        help="Let web pages on this origin call the API (e.g. http://localhost:3000). Repeatable.",
    ),
    max_queue: int = max_queue_option(),
    max_streams: int = max_streams_option(),
    max_chars: int = typer.Option(
        LIMITS.max_chars,
        "--max-chars",
        metavar="N",
        min=1,
        max=_MAX["max_chars"],
        help="Text per request.",
    ),
    max_upload_mb: float = typer.Option(
        LIMITS.max_upload_bytes / MB,
        "--max-upload-mb",
        metavar="MB",
        min=0.01,
        max=_MAX["max_upload_bytes"] / MB,
        help="Size of a recording to clone.",
    ),
    max_clone_seconds: float = typer.Option(
        LIMITS.max_clone_seconds,
        "--max-clone-seconds",
        metavar="S",
        min=1.0,
        max=_MAX["max_clone_seconds"],
        help="Length of a recording to clone.",
    ),
    max_decoded_samples: int = typer.Option(
        LIMITS.max_decoded_samples,
        "--max-decoded-samples",
        metavar="N",
        min=1000,
        max=_MAX["max_decoded_samples"],
        help="Samples (all channels) one recording may decode to; checked from its header.",
    ),
    request_timeout: float = request_timeout_option(),
    body_timeout: float = typer.Option(
        LIMITS.body_seconds,
        "--body-timeout",
        metavar="S",
        min=0.1,
        max=_MAX["body_seconds"],
        help="Seconds a request's body may take to arrive (else 408).",
    ),
    header_timeout: float = typer.Option(
        LIMITS.header_seconds,
        "--header-timeout",
        metavar="S",
        min=0.1,
        max=_MAX["header_seconds"],
        help="Seconds a connection may take to send a request's headers (else it is closed).",
    ),
    idle_timeout: float = typer.Option(
        LIMITS.idle_seconds,
        "--idle-timeout",
        metavar="S",
        min=0.1,
        max=_MAX["idle_seconds"],
        help="Seconds an idle keep-alive connection stays open.",
    ),
    max_connections: int = typer.Option(
        LIMITS.max_connections,
        "--max-connections",
        metavar="N",
        min=1,
        max=_MAX["max_connections"],
        help="Open connections; requests on more get 503.",
    ),
    shutdown_timeout: float = typer.Option(
        SETTINGS.shutdown_seconds,
        "--shutdown-timeout",
        metavar="S",
        min=0.0,
        max=3600.0,
        help="On SIGTERM: seconds in-flight requests get to finish before they are cancelled.",
    ),
    log_level: str = log_level_option(),
    ray: str | None = typer.Option(
        None,
        "--ray",
        metavar="[ADDRESS]",
        help="Serve as a Ray Serve application: alone, on a local Ray; auto or HOST:PORT "
        "joins a cluster (pip install 'pockettts[ray]').",
    ),
    min_replicas: int = typer.Option(
        defaults.RAY_MIN_REPLICAS,
        "--min-replicas",
        metavar="N",
        min=1,
        max=1000,
        help="With --ray: replicas at least.",
    ),
    max_replicas: int | None = typer.Option(
        None,
        "--max-replicas",
        metavar="N",
        min=1,
        max=1000,
        help="With --ray: replicas at most (default: --min-replicas); between the two, "
        "Ray Serve scales on ongoing requests (target: --max-streams per replica).",
    ),
    upscale_delay: float = typer.Option(
        defaults.RAY_UPSCALE_DELAY_S,
        "--upscale-delay",
        metavar="S",
        min=0.5,
        max=3600.0,
        help="With --ray: seconds of load above the target before a replica is added.",
    ),
    downscale_delay: float = typer.Option(
        defaults.RAY_DOWNSCALE_DELAY_S,
        "--downscale-delay",
        metavar="S",
        min=0.5,
        max=86400.0,
        help="With --ray: seconds of load below the target before a replica is removed.",
    ),
) -> None:
    from pocketcli.serve import require_extra

    require_extra()
    check_log_level(log_level)
    if ray is None and (min_replicas != defaults.RAY_MIN_REPLICAS or max_replicas is not None):
        raise click.UsageError("--min-replicas and --max-replicas go with --ray")
    if max_replicas is not None and max_replicas < min_replicas:
        raise click.BadParameter(
            f"{max_replicas} is below --min-replicas {min_replicas}", param_hint="--max-replicas"
        )
    if ray is not None:
        from pocketcli.serve.rayserve import require_ray_serve

        require_ray_serve()  # without the extra: say what to install before loading anything
    choice = checked_model_request(model, voice, voice_file, voice_dir)
    settings = ServeSettings(
        limits=Limits(
            max_chars=max_chars,
            max_upload_bytes=int(max_upload_mb * MB),
            max_clone_seconds=max_clone_seconds,
            max_decoded_samples=max_decoded_samples,
            max_queue=max_queue,
            max_streams=max_streams,
            request_seconds=request_timeout,
            body_seconds=body_timeout,
            header_seconds=header_timeout,
            idle_seconds=idle_timeout,
            max_connections=max_connections,
        ),
        api_key=api_key or None,
        voice_dir=voice_dir,
        shutdown_seconds=shutdown_timeout,
        cors_origins=tuple(cors_origin or ()),
    )
    from pocketcli.frontends import logs
    from pocketcli.serve.server import run

    if not api_key and host not in ("127.0.0.1", "localhost", "::1"):
        logs.configure(log_level.lower())
        logs.logger().warning(
            "listening beyond this machine without --api-key: anyone who reaches it can use it",
            extra={"host": host},
        )
    if ray is not None:
        from pocketcli.serve import rayserve

        scaling = rayserve.Scaling(
            min_replicas,
            max_replicas or min_replicas,
            upscale_delay_s=upscale_delay,
            downscale_delay_s=downscale_delay,
        )
        choice, voice_file, settings = absolute_for_ray(choice, voice_file, settings)
        job = rayserve.RayServe(ray, choice, voice, voice_file, settings, scaling, host, port)
        return rayserve.run(job, log_level.lower())
    from pocketcli.frontends.backend import load_backend

    run(lambda: load_backend(choice, voice, voice_file), settings, host, port, log_level.lower())
