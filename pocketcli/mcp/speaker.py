"""Speech on the speakers, queued: each ``say`` is one text, played in turn.

A text waiting here holds nothing of the server's admission (the one every
front end goes through, ``pocketcli.frontends.admission``): no slot, no
deadline. Its stream (a ``ModelJob``) is submitted when the text before it
has made its last frame, so it is made while that one's last frames play (no
gap between texts), or at the call when nothing plays or waits (busy: refused
there, as ``synthesize`` is); its deadline counts from that submission. The
speakers hold at most two streams: the text playing and the next one. A text
whose turn comes while the server is busy waits for a slot, tried again every
``_POLL_SECONDS``, for as long as a stream may take (``busy_seconds``: the
server's ``--request-timeout``); past that it is not spoken, ``status``'s
``last_error`` says so, and the next text has its turn. A thread plays the
texts in order through a fresh sink each (``PortAudioSink`` on the sound
device), reading each job's frames from the server's event loop. ``stop``
cancels what is playing and drops what waits. At most ``max_queue`` texts
wait; more are refused.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pocketcli import defaults
from pocketcli.frontends.admission import END, ERROR, Busy, Cancelled, ModelJob, ShuttingDown

if TYPE_CHECKING:
    import numpy as np

    from pocketcli.audio.playback import AudioSink

STOPPED = "stopped"  # the cancel reason of a text stop_speaking (or an interrupt) drops
_POLL_SECONDS = 0.25  # how often a reader waiting for a frame looks for a stop


class QueueFull(Exception):
    pass


# Makes a text's stream and submits it to the admission, on the text's event loop
# (raises the admission's ``Busy`` or ``ShuttingDown``).
Start = Callable[[], ModelJob]


@dataclass(eq=False)
class _Item:
    start: Start
    loop: asyncio.AbstractEventLoop  # the loop the job is made on and its frames come through
    voice: str
    text: str
    job: ModelJob | None = None  # None until its stream is submitted
    made: bool = False  # its job has left the admission (last frame made, or it failed)
    stopped: bool = False


class Speaker:
    def __init__(
        self,
        make_sink: Callable[[], AudioSink],
        max_queue: int = defaults.MCP_MAX_QUEUE,
        deadline_message: Callable[[], str] = lambda: "no speech in time",
        busy_seconds: float = 300.0,
    ) -> None:
        self._make_sink = make_sink
        self._max_queue = max_queue
        self._deadline_message = deadline_message
        self._busy_seconds = busy_seconds
        self._waiting: deque[_Item] = deque()
        self._playing: _Item | None = None  # the text whose turn it is (admitted or not yet)
        self._sink: AudioSink | None = None
        self._changed = threading.Condition()
        self._closed = False
        self.spoken = 0  # texts played to the end
        self.errors: list[str] = []
        self._thread = threading.Thread(target=self._play, name="pockettts-speaker", daemon=True)
        self._thread.start()

    def say(self, start: Start, text: str, voice_name: str) -> int:
        """Queues a text (called on the event loop its stream is to be read on); returns
        how many texts are ahead of it. ``QueueFull`` when ``max_queue`` texts already
        wait; when nothing plays or waits, its stream is submitted here (``start``'s
        ``Busy`` or ``ShuttingDown`` to the caller)."""
        item = _Item(start, asyncio.get_running_loop(), voice_name, text)
        with self._changed:
            if len(self._waiting) >= self._max_queue:
                raise QueueFull(
                    f"{len(self._waiting)} texts are already waiting to be spoken; "
                    "call stop_speaking or wait"
                )
            ahead = len(self._waiting) + (self._playing is not None)
            if ahead == 0:
                item.job = start()
            self._waiting.append(item)
            self._changed.notify_all()
        if item.job is not None:
            item.job.on_done(lambda _job: self._made(item))
        self._advance()
        return ahead

    def stop(self) -> int:
        """Stops what is playing and drops what waits; returns how many texts were dropped."""
        with self._changed:
            dropped = list(self._waiting)
            self._waiting.clear()
            playing, sink = self._playing, self._sink
            for item in [*dropped, playing]:
                if item is not None:
                    item.stopped = True  # no stream is submitted for it any more
            self._changed.notify_all()  # a text waiting for a slot stops waiting
        for item in dropped:
            if item.job is not None:
                item.job.cancel(STOPPED)
        if playing is not None:
            if playing.job is not None:
                playing.job.cancel(STOPPED)
            if sink is not None:
                with contextlib.suppress(Exception):  # it may have just finished on its own
                    sink.abort()
        return len(dropped) + (playing is not None)

    def status(self) -> dict[str, object]:
        with self._changed:
            playing = self._playing
            if playing is not None and playing.job is None:  # still waiting for a slot
                playing = None
            return {
                "speaking": playing is not None,
                "text": _excerpt(playing.text) if playing else None,
                "voice": playing.voice if playing else None,
                "waiting": len(self._waiting) + (self._playing is not None and playing is None),
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
                if self._admitted(item):
                    self._advance()  # its last frame may be made already: the next one's turn
                    self._play_one(item)
            finally:
                with self._changed:
                    self._playing, self._sink = None, None
                    self._changed.notify_all()

    def _made(self, item: _Item) -> None:
        """``item``'s job has left the admission (its hook, on whatever thread)."""
        with self._changed:
            item.made = True
        self._advance()

    def _advance(self) -> None:
        """Submits the next text's stream once the playing one has made its last frame
        (on the next text's loop; busy: it tries again when its turn comes)."""
        with self._changed:
            playing = self._playing
            if playing is None or not playing.made or not self._waiting:
                return
            head = self._waiting[0]
            if head.job is not None or head.stopped:
                return
        with contextlib.suppress(RuntimeError):  # its loop is closed: the server stops
            head.loop.call_soon_threadsafe(self._admit, head)

    def _admit(self, item: _Item) -> None:
        """Submits ``item``'s stream (on its loop) unless it has one or was stopped; a busy
        (or stopping) server leaves it without one."""
        with self._changed:
            if item.job is not None or item.stopped or self._closed:
                return
            try:
                item.job = item.start()
            except (Busy, ShuttingDown):
                return
        item.job.on_done(lambda _job: self._made(item))

    async def _admit_async(self, item: _Item) -> None:
        self._admit(item)

    def _admitted(self, item: _Item) -> bool:
        """Whether ``item`` has its stream, submitted now if it has none: while the server
        is busy, tried again every ``_POLL_SECONDS`` for up to ``busy_seconds``, then
        given up (said in ``status``)."""
        end = time.monotonic() + self._busy_seconds
        while True:
            with self._changed:
                if item.stopped or self._closed:
                    return False
                if item.job is not None:
                    return True
            try:
                future = asyncio.run_coroutine_threadsafe(self._admit_async(item), item.loop)
            except RuntimeError:  # its loop is closed: the server stops
                return False
            while not future.done():
                with self._changed:
                    if item.stopped or self._closed:
                        future.cancel()
                        return False
                with contextlib.suppress(concurrent.futures.TimeoutError):
                    future.result(_POLL_SECONDS)
            failed = None if future.cancelled() else future.exception()
            with self._changed:
                if failed is not None:  # not the admission's refusal: said, not retried
                    self.errors.append(str(failed) or type(failed).__name__)
                    return False
                if item.job is not None or item.stopped or self._closed:
                    continue
                if time.monotonic() >= end:
                    self.errors.append(
                        f"{_excerpt(item.text)!r} was not spoken: the server stayed busy "
                        f"for {self._busy_seconds:g} s"
                    )
                    return False
                self._changed.wait_for(lambda: item.stopped or self._closed, _POLL_SECONDS)

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
