"""A fake ``AudioSink`` (pocketcli.audio.playback): records exactly what it is given."""

from __future__ import annotations

import numpy as np


class RecordingSink:
    def __init__(self) -> None:
        self.writes: list[np.ndarray] = []
        self.flushes: list[int] = []  # samples written so far, at each flush
        self.closed = False
        self.aborted = False

    def write(self, audio: np.ndarray) -> None:
        self.writes.append(np.array(audio, np.float32, copy=True))

    def flush(self) -> None:
        self.flushes.append(sum(a.size for a in self.writes))

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.aborted = True
