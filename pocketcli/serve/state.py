"""What one server holds (settings, metrics, the loaded model, voices, scheduler), and
``Ready``: the one dependency a route takes to say it needs the model loaded."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated

from fastapi import Depends, Request

from pocketcli.frontends import logs
from pocketcli.frontends.admission import JobRunner, make_admission
from pocketcli.frontends.backend import Backend
from pocketcli.frontends.encoding import available_formats
from pocketcli.frontends.voices import ClonedShelf, VoiceBook
from pocketcli.serve.apierrors import ApiError, redact_paths
from pocketcli.serve.metrics import Metrics
from pocketcli.serve.settings import ServeSettings


@dataclass
class ServerState:
    settings: ServeSettings
    metrics: Metrics = field(default_factory=Metrics)
    backend: Backend | None = None
    voices: VoiceBook | None = None
    scheduler: JobRunner | None = None
    load_error: str | None = None
    on_load_failed: Callable[[str], None] | None = None
    shelf: ClonedShelf | None = None  # where cloned voices are kept (None: this process)

    def update_gauges(self) -> None:
        if self.scheduler is not None:
            self.metrics.queue_depth.set(self.scheduler.waiting)
            self.metrics.active.set(self.scheduler.active)

    def load(self, load: Callable[[], Backend]) -> None:
        if self.backend is not None:  # loaded already (a Ray Serve replica loads first)
            return
        log = logs.logger()
        started = time.perf_counter()
        try:
            backend = load()
        except BaseException as exc:  # reported, and the server stops (see server.run)
            self.load_error = str(exc) or type(exc).__name__
            log.error("model load failed", extra={"error": self.load_error})
            if self.on_load_failed is not None:
                self.on_load_failed(self.load_error)
            return
        limits = self.settings.limits
        self.voices = VoiceBook(
            backend, self.settings.voice_dir, limits.max_cloned_voices, self.shelf
        )
        self.scheduler = make_admission(limits.max_queue, self.update_gauges, limits.max_streams)
        self.metrics.watch_engine(backend.engine_stats)
        self.metrics.watch_streams(self.scheduler.streams)
        self.backend = backend
        self.metrics.ready.set(1)
        log.info(
            "ready",
            extra={
                "load_s": round(time.perf_counter() - started, 3),
                "voice": backend.default_voice_name,
                "sample_rate": backend.sample_rate,
                "formats": list(available_formats()),
            },
        )


def state_of(request: Request) -> ServerState:
    return request.app.state.pockettts


@dataclass(frozen=True)
class Loaded:
    """The server once its model is loaded: what a route that speaks or clones needs."""

    state: ServerState
    backend: Backend
    voices: VoiceBook
    scheduler: JobRunner

    @property
    def settings(self) -> ServeSettings:
        return self.state.settings


def ready(request: Request) -> Loaded:
    """The loaded server, or a 503 saying why not (still loading: with Retry-After)."""
    state = state_of(request)
    if state.backend is None or state.voices is None or state.scheduler is None:
        if state.load_error is not None:
            said = redact_paths(state.load_error)
            raise ApiError(503, f"the model failed to load: {said}", "not_ready")
        raise ApiError(503, "the model is still loading", "not_ready", {"Retry-After": "2"})
    return Loaded(state, state.backend, state.voices, state.scheduler)


Ready = Annotated[Loaded, Depends(ready)]
