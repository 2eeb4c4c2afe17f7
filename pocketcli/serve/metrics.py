"""Prometheus metrics of one server (its own registry, so apps in one process stay apart)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CONTENT_TYPE_LATEST as CONTENT_TYPE  # noqa: F401  (re-exported)
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pocketcli.engine.scheduler import SchedulerStats
from pocketcli.frontends.admission import FrontCounts

_SECONDS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
_RTFX = (0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 20.0, 50.0, 100.0)


class _EngineCollector:
    def __init__(self, stats: Callable[[], SchedulerStats | None]) -> None:
        self._stats = stats

    def describe(self) -> list:
        return []

    def collect(self) -> Iterator[CounterMetricFamily]:
        stats = self._stats()
        ticks = CounterMetricFamily(
            "pockettts_engine_ticks",
            "Engine ticks by the streams that made a frame in them (the batch size)",
            labels=["rows"],
        )
        frames = CounterMetricFamily("pockettts_engine_frames", "Frames made by the engine")
        if stats is not None:
            for rows, count in sorted(stats.batch_sizes.items()):
                ticks.add_metric([str(rows)], count)
            frames.add_metric([], stats.frames)
        yield ticks
        yield frames


class _StreamsCollector:
    """Each front end's streams through the one admission (a label per front end)."""

    def __init__(self, streams: Callable[[], dict[str, FrontCounts]]) -> None:
        self._streams = streams

    def describe(self) -> list:
        return []

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        label = ["front_end"]
        now = GaugeMetricFamily(
            "pockettts_streams",
            "Streams running or waiting, by front end",
            labels=[*label, "state"],
        )
        admitted = CounterMetricFamily(
            "pockettts_streams_admitted", "Streams admitted, by front end", labels=label
        )
        refused = CounterMetricFamily(
            "pockettts_streams_refused", "Streams refused as busy, by front end", labels=label
        )
        for front, counts in sorted(self._streams().items()):
            now.add_metric([front, "active"], counts.active)
            now.add_metric([front, "waiting"], counts.waiting)
            admitted.add_metric([front], counts.admitted)
            refused.add_metric([front], counts.refused)
        yield now
        yield admitted
        yield refused


class Metrics:
    def __init__(self) -> None:
        r = self.registry = CollectorRegistry()
        self.requests = Counter(
            "pockettts_requests", "HTTP requests answered", ["endpoint", "status"], registry=r
        )
        self.outcomes = Counter(
            "pockettts_generations",
            "Generations by how they ended (done, disconnected, deadline, shutdown, error)",
            ["outcome"],
            registry=r,
        )
        self.queue_depth = Gauge("pockettts_queue_depth", "Jobs waiting for the model", registry=r)
        self.active = Gauge("pockettts_active_jobs", "Jobs running on the model now", registry=r)
        self.ready = Gauge("pockettts_ready", "1 once the model is loaded", registry=r)
        self.queue_wait = Histogram(
            "pockettts_queue_wait_seconds",
            "Time from acceptance to start",
            buckets=_SECONDS,
            registry=r,
        )
        self.ttfa = Histogram(
            "pockettts_time_to_first_audio_seconds",
            "Time from acceptance to the first audio frame (queue wait included)",
            buckets=_SECONDS,
            registry=r,
        )
        self.ttfb = Histogram(
            "pockettts_time_to_first_byte_seconds",
            "Time from the request's arrival at its handler to its first audio bytes",
            buckets=_SECONDS,
            registry=r,
        )
        self.rtfx = Histogram(
            "pockettts_rtfx",
            "Audio seconds per second of generation, per request",
            buckets=_RTFX,
            registry=r,
        )
        self.audio_seconds = Counter(
            "pockettts_audio_seconds", "Seconds of audio generated", registry=r
        )
        self.generation_seconds = Counter(
            "pockettts_generation_seconds", "Seconds the model spent generating", registry=r
        )

    def watch_engine(self, stats: Callable[[], SchedulerStats | None]) -> None:
        """Adds the engine scheduler's figures, read at each scrape: ticks by rows per
        tick (the batch sizes) and frames made."""
        self.registry.register(_EngineCollector(stats))

    def watch_streams(self, streams: Callable[[], dict[str, FrontCounts]]) -> None:
        """Adds the admission's streams by front end (``pockettts_streams{front_end,
        state}``, ``pockettts_streams_admitted_total``, ``..._refused_total``)."""
        self.registry.register(_StreamsCollector(streams))

    def render(self) -> bytes:
        return generate_latest(self.registry)


class CountRequests:
    """Counts every answer by route template (``/v1/models/{model_id}``, never the path a
    client sent: a fixed set of labels) and status."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app, self.metrics = app, metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 0

        async def watch(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            route = scope.get("route")
            endpoint = getattr(route, "path", None) or UNMATCHED
            self.metrics.requests.labels(endpoint, str(status or 500)).inc()


UNMATCHED = "(no route)"
