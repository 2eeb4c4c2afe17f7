"""The server's settings and limits, with their defaults: the one place they are set.

No server dependency is imported here, so ``pockettts serve --help`` reads the
defaults of its flags from these classes without the ``serve`` extra.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pocketcli import defaults
from pocketcli.frontends.admission import ADMISSION_MAXIMA, AdmissionLimits


@dataclass(frozen=True)
class Limits:
    max_chars: int = defaults.MAX_CHARS  # text per request (OpenAI's own limit)
    max_upload_bytes: int = 10 * 2**20  # a recording to clone
    max_clone_seconds: float = 60.0  # longer recordings are refused (30 s are used)
    # Decoded samples of one recording, all channels (float32: 4 bytes each): the
    # first 30 s of 96 kHz stereo fit; the header is checked before decoding.
    max_decoded_samples: int = 6_000_000
    # Every front end's admission (HTTP, SSE, websocket turns): one queue, one limit.
    max_queue: int = AdmissionLimits.max_queue  # waiting while max_streams are generated
    max_streams: int = defaults.MAX_STREAMS  # requests generated at once (rows of one batch)
    request_seconds: float = AdmissionLimits.request_seconds  # acceptance to the last byte
    max_cloned_voices: int = 32  # cloned voices kept by id (least recently used go first)
    body_seconds: float = 30.0  # a request's body must have arrived by then (else 408)
    header_seconds: float = 10.0  # a connection's request line and headers, likewise
    idle_seconds: float = 5.0  # an idle keep-alive connection is closed after this
    max_connections: int = 64  # open connections; requests beyond get 503
    # The streaming websocket (/tts/ws): text per turn is max_chars.
    ws_max_message_bytes: int = 64 * 1024  # one client frame
    ws_idle_seconds: float = 300.0  # a socket that sends nothing (and hears nothing) this long
    ws_max_sockets: int = 16  # open at once; more are refused with an error frame

    @property
    def max_body_bytes(self) -> int:
        return self.max_upload_bytes + 64 * 1024  # the upload and its form fields


# The sane maximum of each setting (the CLI refuses more).
MAXIMA = {
    "max_chars": 1_000_000,
    "max_upload_bytes": 200 * 2**20,
    "max_clone_seconds": 3600.0,
    "max_decoded_samples": 100_000_000,
    **{name: ADMISSION_MAXIMA[name] for name in ("max_queue", "max_streams")},
    "request_seconds": ADMISSION_MAXIMA["request_seconds"],
    "body_seconds": 3600.0,
    "header_seconds": 300.0,
    "idle_seconds": 3600.0,
    "max_connections": 10_000,
}


@dataclass(frozen=True)
class ServeSettings:
    limits: Limits = Limits()
    api_key: str | None = None
    voice_dir: Path | None = None
    shutdown_seconds: float = 10.0
    cors_origins: tuple[str, ...] = ()  # web pages on these origins may call the API
