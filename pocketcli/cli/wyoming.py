"""``pockettts wyoming``: speech for Home Assistant (and any Wyoming client)."""

from __future__ import annotations

from pathlib import Path

import typer

from pocketcli import defaults
from pocketcli.cli import clickcompat as click
from pocketcli.cli import flags
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

HELP = """Serve speech over the Wyoming protocol (Home Assistant's voice pipeline):
describe, synthesize and streaming synthesis. Listens on 127.0.0.1:10200 unless
--uri says otherwise (tcp://HOST:PORT, unix://PATH or stdio://).

Examples:

  pockettts wyoming                                 (tcp://127.0.0.1:10200)

  pockettts wyoming --uri tcp://0.0.0.0:10200 --language french --voice-dir ./voices

Then in Home Assistant: Settings > Devices & services > Add integration > Wyoming
Protocol, with this machine's address and port 10200.
"""


@takes_model_flags(only=SERVER_MODEL_FLAGS)
def wyoming_command(
    uri: str = typer.Option(
        defaults.WYOMING_URI,
        "--uri",
        metavar="URI",
        help="tcp://HOST:PORT, unix://PATH or stdio:// (loopback by default).",
    ),
    model: ModelFlags = MODEL,
    voice: str | None = flags.voice("Default built-in voice (default: the language's own)."),
    voice_file: Path | None = flags.voice_file(),
    voice_dir: Path | None = voice_dir_option(),
    max_chars: int = typer.Option(
        defaults.MAX_CHARS,
        "--max-chars",
        metavar="N",
        min=1,
        max=MAXIMA["max_chars"],
        help="Text per synthesis.",
    ),
    idle_timeout: float = typer.Option(
        defaults.WYOMING_IDLE_SECONDS,
        "--idle-timeout",
        metavar="S",
        min=1.0,
        max=MAXIMA["idle_seconds"],
        help="Seconds a client may send nothing before it is disconnected.",
    ),
    max_streams: int = max_streams_option("Syntheses"),
    max_queue: int = max_queue_option("Syntheses"),
    request_timeout: float = request_timeout_option("synthesis"),
    log_level: str = log_level_option(),
) -> None:
    from pocketcli.wyoming import require_extra

    require_extra()
    # SIGTERM and Ctrl-C are how a server stops: quiet from the start (QUIET_COMMANDS).
    from pocketcli.frontends import logs
    from pocketcli.frontends.admission import AdmissionLimits
    from pocketcli.wyoming.handler import WyomingLimits
    from pocketcli.wyoming.server import LOOPBACK, parse_uri, run

    level = check_log_level(log_level)
    try:
        address = parse_uri(uri)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--uri") from None
    load = backend_loader(model, voice, voice_file, voice_dir)
    if address.scheme == "tcp" and address.host not in LOOPBACK:
        logs.configure(level)
        logs.logger().warning(
            "listening beyond this machine: Wyoming has no API key, anyone who reaches "
            "this port can use it (keep it on a trusted network)",
            extra={"host": address.host},
        )
    admission = AdmissionLimits(max_streams, max_queue, request_timeout)
    limits = WyomingLimits(max_chars=max_chars, idle_seconds=idle_timeout, admission=admission)
    run(load, address, limits, voice_dir, level)
