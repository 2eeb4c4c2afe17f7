"""The server's settings and limits, with their defaults: the one place they are set.

No server dependency is imported here, so ``pockettts serve --help`` reads the
defaults of its flags from these classes without the ``serve`` extra.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Limits:
    max_chars: int = 4096  # text per request (OpenAI's own limit)
    max_upload_bytes: int = 10 * 2**20  # a recording to clone
    max_clone_seconds: float = 60.0  # longer recordings are refused (30 s are used)
    max_queue: int = 4  # requests waiting while one is generated; more get 503
    request_seconds: float = 300.0  # per request, from acceptance to the last byte
    max_cloned_voices: int = 32  # cloned voices kept by id (least recently used go first)

    @property
    def max_body_bytes(self) -> int:
        return self.max_upload_bytes + 64 * 1024  # the upload and its form fields


@dataclass(frozen=True)
class ServeSettings:
    limits: Limits = Limits()
    api_key: str | None = None
    voice_dir: Path | None = None
    shutdown_seconds: float = 10.0
    cors_origins: tuple[str, ...] = ()  # web pages on these origins may call the API
