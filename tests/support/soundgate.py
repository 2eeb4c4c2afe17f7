"""A sound device the test lets take audio: ALSA's ``file`` plugin (over its null device)
writing to a FIFO. ALSA opens the file when a stream is opened, not when PortAudio lists
the devices, and opening a FIFO to write waits for a reader: while the gate is shut, a
text's sink waits to open, so the text is playing (the speaker holds it) and cannot end,
whatever the machine's load; once the test opens the gate (reads the FIFO) it plays at
once. ALSA's bare null device takes audio as fast as it comes: a long text on the tiny
pack ends within a second, which a loaded machine's scheduler can let pass unseen."""

from __future__ import annotations

import contextlib
import os
import select
import threading
from pathlib import Path

from tests.unit.audio.test_playback import _portaudio_env

CONFIG = """pcm.!default {{
    type file
    slave.pcm {{ type null }}
    file "{fifo}"
    format "raw"
}}
ctl.!default {{
    type hw
    card 0
}}
"""


class SoundGate:
    """``env``: a server's environment whose default device is the gate (shut at first).
    Shut it only while no sink is open (a writer would lose its reader)."""

    def __init__(self, tmp_path: Path) -> None:
        self.fifo = tmp_path / "device.fifo"
        os.mkfifo(self.fifo)
        self.env = _portaudio_env(tmp_path, None)
        config = tmp_path / "gate.conf"
        config.write_text(CONFIG.format(fifo=self.fifo), encoding="utf-8")
        self.env["ALSA_CONFIG_PATH"] = str(config)
        self._fd: int | None = None
        self._shut = threading.Event()
        self._reader: threading.Thread | None = None

    def open(self) -> None:
        """Lets every sink open and takes what they play (a reader holds the FIFO)."""
        if self._fd is not None:
            return
        # read and write: the FIFO never reads as ended between two texts' sinks
        self._fd = os.open(self.fifo, os.O_RDWR | os.O_NONBLOCK)
        self._shut.clear()
        self._reader = threading.Thread(target=self._drain, args=(self._fd,), daemon=True)
        self._reader.start()

    def shut(self) -> None:
        """The next sink waits to open until ``open``."""
        if self._fd is None or self._reader is None:
            return
        self._shut.set()
        self._reader.join(10)
        os.close(self._fd)
        self._fd, self._reader = None, None

    def _drain(self, fd: int) -> None:
        while not self._shut.is_set():
            ready, _, _ = select.select([fd], [], [], 0.1)
            if ready:
                with contextlib.suppress(BlockingIOError):
                    os.read(fd, 1 << 16)
