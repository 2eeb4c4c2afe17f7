"""A stop signal that arrives after the last byte is written but before the rename.

The signal's exception can be swallowed where Python cannot raise it (a ``__del__``, a C
callback), so the signal is only recorded; ``atomic_path`` must still refuse to publish.
These tests record the signal at exactly that moment, between the writer's last write and
its publication, and check that nothing appears (or the old file stays) and no temporary
file is left, for each kind of writer; and that without the signal the same write publishes.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import pocketcli.voices.state as state_module
from pocketcli import interrupts
from pocketcli.atomic import atomic_path
from pocketcli.audio.output import open_audio_writer
from pocketcli.interrupts import Terminated
from pocketcli.voices.state import VoiceState, save_voice_state

Stop = Callable[[], None]


def _raw(path: Path, stop: Stop) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(b"new contents")
        stop()


def _audio(fmt: str) -> Callable[[Path, Stop], None]:
    def write(path: Path, stop: Stop) -> None:
        tone = np.sin(np.linspace(0, 200, 4800, dtype=np.float32)) * 0.5
        with open_audio_writer(path, fmt, 24_000) as writer:
            writer.write(tone)
            writer.write(tone[::-1])
            stop()  # every sample written; finish() encodes and publishes

    return write


def _voice(path: Path, stop: Stop) -> None:
    keys = tuple(np.ones((3, 2, 4), np.float32) for _ in range(2))
    state = VoiceState(keys, keys)
    real = state_module.save_file

    def save_then_stop(tensors, name) -> None:  # the last write, then the signal
        real(tensors, name)
        stop()

    state_module.save_file = save_then_stop
    try:
        save_voice_state(state, path)
    finally:
        state_module.save_file = real


WRITERS = {
    "atomic_path": ("out.bin", _raw),
    "wav": ("out.wav", _audio("wav")),
    "flac": ("out.flac", _audio("flac")),
    "voice state": ("voice.safetensors", _voice),
}
SIGNALS = {signal.SIGINT: KeyboardInterrupt, signal.SIGTERM: Terminated}


@pytest.fixture
def stopped(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    record: list[int] = []
    monkeypatch.setattr(interrupts, "stopped_by", record)
    return record


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".part"))


@pytest.mark.parametrize("signum", sorted(SIGNALS))
@pytest.mark.parametrize("writer", sorted(WRITERS))
@pytest.mark.parametrize("old", [None, b"the old file"])
def test_a_signal_before_the_rename_publishes_nothing(
    tmp_path: Path, stopped: list[int], writer: str, signum: int, old: bytes | None
) -> None:
    name, write = WRITERS[writer]
    path = tmp_path / name
    if old is not None:
        path.write_bytes(old)
    with pytest.raises(SIGNALS[signum]):
        write(path, lambda: stopped.append(signum))
    if old is None:
        assert not path.exists()
    else:
        assert path.read_bytes() == old
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_without_a_signal_the_same_write_publishes(
    tmp_path: Path, stopped: list[int], writer: str
) -> None:
    name, write = WRITERS[writer]
    path = tmp_path / name
    path.write_bytes(b"the old file")
    write(path, lambda: None)
    assert path.read_bytes() != b"the old file" and path.stat().st_size > 8
    assert _leftovers(tmp_path) == [] and stopped == []
