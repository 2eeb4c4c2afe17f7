"""Speech on the speakers, queued: each ``say`` is one live session, played in turn.

A session is made (and its text checked) when the text is queued, so it is
generated while the one before it plays; a thread plays the sessions in order
through a fresh sink each (``PortAudioSink`` on the sound device). ``stop``
cancels what is playing and drops what waits. At most ``max_queue`` texts
wait; more are refused.
"""

from __future__ import annotations

import contextlib
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pocketcli import defaults
from pocketcli.options import SpeakOptions
from pocketcli.session import Session, play_session

if TYPE_CHECKING:
    from pocketcli.api import PocketTTS
    from pocketcli.audio.playback import AudioSink
    from pocketcli.voices.state import VoiceState


class QueueFull(Exception):
    pass


@dataclass
class _Item:
    session: Session
    voice: str
    text: str


class Speaker:
    def __init__(
        self,
        tts: PocketTTS,
        make_sink: Callable[[], AudioSink],
        max_queue: int = defaults.MCP_MAX_QUEUE,
    ) -> None:
        self._tts = tts
        self._make_sink = make_sink
        self._max_queue = max_queue
        self._waiting: deque[_Item] = deque()
        self._playing: _Item | None = None
        self._sink: AudioSink | None = None
        self._changed = threading.Condition()
        self._closed = False
        self.spoken = 0  # texts played to the end
        self.errors: list[str] = []
        self._thread = threading.Thread(target=self._play, name="pockettts-speaker", daemon=True)
        self._thread.start()

    def say(
        self,
        text: str,
        voice: VoiceState | None,
        voice_name: str,
        *,
        interrupt: bool = False,
        options: SpeakOptions | None = None,
    ) -> int:
        """Queues ``text`` (its errors raise here); returns how many texts are ahead of it."""
        if interrupt:
            self.stop()
        with self._changed:
            if len(self._waiting) >= self._max_queue:
                raise QueueFull(
                    f"{len(self._waiting)} texts are already waiting to be spoken; "
                    "call stop_speaking or wait"
                )
        session = self._tts.session(voice, options or SpeakOptions())
        try:
            session.enqueue(text)
            session.finish()
        except BaseException:
            session.cancel()
            raise
        with self._changed:
            ahead = len(self._waiting) + (self._playing is not None)
            self._waiting.append(_Item(session, voice_name, text))
            self._changed.notify_all()
        return ahead

    def stop(self) -> int:
        """Stops what is playing and drops what waits; returns how many texts were dropped."""
        with self._changed:
            dropped = list(self._waiting)
            self._waiting.clear()
            playing, sink = self._playing, self._sink
        for item in dropped:
            item.session.cancel(wait=False)
        if playing is not None:
            playing.session.cancel()
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
            sink: AudioSink | None = None
            try:
                sink = self._make_sink()
                with self._changed:
                    self._sink = sink
                play_session(item.session, [sink])
                if not item.session.cancelled:
                    sink.close()
                    self.spoken += 1
            except Exception as exc:  # a device that went away, a generation that failed
                item.session.cancel()
                if sink is not None:
                    sink.abort()
                self.errors.append(str(exc) or type(exc).__name__)
            finally:
                with self._changed:
                    self._playing, self._sink = None, None
                    self._changed.notify_all()


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= 80 else flat[:77] + "..."
