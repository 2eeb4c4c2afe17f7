"""A stream spoken on a scheduler of its own: the engine's frames for one job, alone."""

from __future__ import annotations

from collections.abc import Iterable

from pocketcli.engine.chunk import Frame, GenerationSettings
from pocketcli.engine.noise import NoiseSource
from pocketcli.engine.scheduler import Scheduler
from pocketcli.normalize.timeline import Pause
from pocketcli.runtimes.base import Runtime
from pocketcli.text import ChunkPlan
from pocketcli.voices.state import VoiceState


def frames_alone(
    runtime: Runtime,
    chunks: Iterable[ChunkPlan | Pause],
    voice: VoiceState | None,
    noise: NoiseSource,
    settings: GenerationSettings,
    *,
    threaded_decoder: bool = True,
) -> list[Frame]:
    """Every frame of one stream, the only row of a fresh scheduler."""
    scheduler = Scheduler(runtime, threaded_decoder=threaded_decoder)
    try:
        return list(scheduler.submit(chunks, voice, noise, settings))
    finally:
        scheduler.close()
