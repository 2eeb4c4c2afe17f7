"""Speech on the speakers, queued: each ``say`` is one admitted stream, played in turn.

A text's stream is a ``ModelJob`` of the server's admission, the one every
front end goes through (``pocketcli.frontends.admission``): it is submitted
when the text is queued (busy: refused there, as ``synthesize`` is), so it is
generated while the one before it plays, and it counts against
``--max-streams`` and ``--max-queue`` until its last frame is made. A thread
plays the streams in order through a fresh sink each (``PortAudioSink`` on
the sound device), reading each job's frames from the server's event loop.
``stop`` cancels what is playing and what waits. At most ``max_queue`` texts
wait; more are refused.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pocketcli import defaults
from pocketcli.frontends.admission import END, ERROR, Cancelled, ModelJob

if TYPE_CHECKING:
    import numpy as np

    from pocketcli.audio.playback import AudioSink

STOPPED = "stopped"  # the cancel reason of a text stop_speaking (or an interrupt) drops
_POLL_SECONDS = 0.25  # how often a reader waiting for a frame looks for a stop


class QueueFull(Exception):
    pass


@dataclass
class _Item:
    job: ModelJob
    loop: asyncio.AbstractEventLoop  # the loop the job's frames come through
    voice: str
    text: str


class Speaker:
    def __init__(
        self,
        make_sink: Callable[[], AudioSink],
        max_queue: int = defaults.MCP_MAX_QUEUE,
        deadline_message: Callable[[], str] = lambda: "no speech in time",
    ) -> None:
        self._make_sink = make_sink
        self._max_queue = max_queue
        self._deadline_message = deadline_message
        self._waiting: deque[_Item] = deque()
        self._playing: _Item | None = None
        self._sink: AudioSink | None = None
        self._changed = threading.Condition()
        self._closed = False
        self.spoken = 0  # texts played to the end
        self.errors: list[str] = []
        self._thread = threading.Thread(target=self._play, name="pockettts-speaker", daemon=True)
        self._thread.start()

    def check_room(self) -> None:
        """Raises ``QueueFull`` when ``max_queue`` texts already wait (before a stream
        is asked of the admission for one more)."""
        with self._changed:
            if len(self._waiting) >= self._max_queue:
                raise QueueFull(
                    f"{len(self._waiting)} texts are already waiting to be spoken; "
                    "call stop_speaking or wait"
                )

    def say(self, job: ModelJob, text: str, voice_name: str) -> int:
        """Queues an admitted ``job`` (called on its event loop); returns how many texts
        are ahead of it."""
        item = _Item(job, asyncio.get_running_loop(), voice_name, text)
        with self._changed:
            ahead = len(self._waiting) + (self._playing is not None)
            self._waiting.append(item)
            self._changed.notify_all()
        return ahead

    def stop(self) -> int:
        """Stops what is playing and drops what waits; returns how many texts were dropped."""
        with self._changed:
            dropped = list(self._waiting)
            self._waiting.clear()
            playing, sink = self._playing, self._sink
        for item in dropped:
            item.job.cancel(STOPPED)
        if playing is not None:
            playing.job.cancel(STOPPED)
            if sink is not None:
                with contextlib.suppress(Exception):  # it may have just finished on its own
                    sink.abort()
        return len(dropped) + (playing is not None)

    def status(self) -> dict[str, object]:
        with self._changed:
            playing = self._playing
            return {
                "speaking": playing is not None,
                "text": _excerpt(playing.text) if playing else None,
                "voice": playing.voice if playing else None,
                "waiting": len(self._waiting),
                "spoken": self.spoken,
                "last_error": self.errors[-1] if self.errors else None,
            }

    def wait_idle(self, timeout: float) -> bool:
        """Whether everything queued was played (or dropped) within ``timeout`` seconds."""
        with self._changed:
            return self._changed.wait_for(
                lambda: self._playing is None and not self._waiting, timeout
            )

    def close(self) -> None:
        self.stop()
        with self._changed:
            self._closed = True
            self._changed.notify_all()
        self._thread.join(10)

    def _play(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: self._waiting or self._closed)
                if self._closed:
                    return
                item = self._waiting.popleft()
                self._playing = item
            try:
                self._play_one(item)
            finally:
                with self._changed:
                    self._playing, self._sink = None, None
                    self._changed.notify_all()

    def _play_one(self, item: _Item) -> None:
        sink: AudioSink | None = None
        try:
            sink = self._make_sink()
            with self._changed:
                self._sink = sink
            for audio in self._frames(item):
                sink.write(audio)
            sink.flush()
            sink.close()
            self.spoken += 1
        except Exception as exc:  # stopped, its deadline, a device gone, a failed generation
            item.job.cancel("failed")
            if sink is not None:
                with contextlib.suppress(Exception):
                    sink.abort()
            if item.job.cancel_reason == "deadline":
                self.errors.append(self._deadline_message())
            elif item.job.cancel_reason != STOPPED:
                self.errors.append(str(exc) or type(exc).__name__)

    def _frames(self, item: _Item) -> Iterator[np.ndarray]:
        """The job's frames, as its event loop receives them, until its end; none once
        the text is stopped (frames made before a stop wait in its queue: a stop while
        the sink opens would let them play)."""
        while True:
            kind, value = self._next(item)
            if item.job.cancelled:
                raise Cancelled(item.job.cancel_reason or "cancelled")
            if kind == END:
                return
            if kind == ERROR:
                raise value
            yield value

    def _next(self, item: _Item) -> tuple[str, object]:
        """The job's next message, read on its loop; a stop (or the server closing)
        ends the wait within ``_POLL_SECONDS`` whatever the loop does."""
        future = asyncio.run_coroutine_threadsafe(item.job.next(), item.loop)
        while True:
            try:
                return future.result(_POLL_SECONDS)
            except concurrent.futures.TimeoutError:
                if item.job.cancelled or self._closed:
                    future.cancel()
                    raise Cancelled(item.job.cancel_reason or "cancelled") from None


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= 80 else flat[:77] + "..."
