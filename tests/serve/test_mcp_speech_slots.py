"""A text waiting in `pockettts mcp`'s speech queue holds no stream of the server's
admission and no deadline: its stream is submitted when the text before it has made its
last frame, and its deadline counts from then. Through the reference SDK's stdio client,
on a sound device that takes audio only once the test opens it (tests/support/soundgate.py):
while it is shut, the text playing cannot end, whatever the machine's load.

Each test here failed on the speaker that submitted every text at its call (measured with
the soundgate shut, --max-streams 4 --max-queue 4 --request-timeout 5): a short synthesize
waited for the queued texts' deadlines; a text queued behind more than --request-timeout's
worth of speech was never spoken; a text queued behind one holding the only stream was
refused busy. The speakers' own bound, out of reach with the admission's defaults, is
tests/serve/test_mcp_queue.py's."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("mcp")

from mcp import ClientSession  # noqa: E402

from tests.serve.test_mcp import _wait_status, call, text_of  # noqa: E402
from tests.support.protohelp import TINY_ARGS  # noqa: E402
from tests.support.soundgate import SoundGate  # noqa: E402
from tests.unit.audio.test_playback import _probe  # noqa: E402

# Longer than the frames made ahead of the speakers: while the device is shut, its stream
# waits for the speakers with its slot held (it cannot be made to the end).
LONG = "This sentence keeps the speakers busy for a while. " * 80


def _gate(tmp_path) -> SoundGate:
    gate = SoundGate(tmp_path)  # shut: a text's sink waits to open until the test opens it
    found = _probe(gate.env)
    if found == "no-portaudio":
        pytest.skip("no PortAudio library (apt-get install libportaudio2)")
    assert found == "output", "sounddevice does not see ALSA's file device"
    return gate


def _run(gate: SoundGate, args: list[str], steps):
    async def guarded(session: ClientSession):
        try:
            return await steps(session)
        finally:
            gate.open()  # nothing left waiting for the device when the server stops

    try:
        return call([*TINY_ARGS, *args], guarded, gate.env)
    finally:
        gate.shut()


def test_texts_waiting_to_be_spoken_leave_synthesize_its_slot(tmp_path) -> None:
    # One text plays (its stream held by the shut device) and three wait, with four streams
    # at once: a synthesize is answered at once. When every queued text was a stream, the
    # four streams were the speakers' and the synthesize waited for their deadline.
    gate = _gate(tmp_path)
    timeout = 30.0

    async def steps(session: ClientSession):
        began = time.monotonic()
        first = await session.call_tool("speak", {"text": LONG})
        await _wait_status(session, lambda s: s["speaking"])
        queued = [await session.call_tool("speak", {"text": LONG}) for _ in range(3)]
        made = await session.call_tool("synthesize", {"text": "Hi."})
        answered = time.monotonic() - began
        during = await _wait_status(session, lambda s: True)
        stopped = await session.call_tool("stop_speaking", {})
        return first, queued, made, answered, during, stopped

    args = ["--max-streams", "4", "--max-queue", "4", "--request-timeout", f"{timeout:g}"]
    first, queued, made, answered, during, stopped = _run(gate, args, steps)
    assert not first.is_error and not any(q.is_error for q in queued), text_of(first)
    assert not made.is_error, text_of(made)
    # Before any queued text's deadline could have freed a slot (its call came after began).
    assert answered < timeout, f"synthesize answered after {answered:.1f} s"
    assert during["speaking"] and during["waiting"] == 3 and during["last_error"] is None
    assert text_of(stopped) == "stopped 4 texts"


def test_a_text_queued_behind_more_than_the_request_timeout_of_speech_is_spoken(
    tmp_path,
) -> None:
    # The device stays shut longer than --request-timeout: the text playing holds its
    # stream waiting for the speakers that long and fails on its deadline (it is its own
    # stream's time); the text behind it is submitted once that stream has ended, so its
    # deadline counts from there and it is spoken when the device opens. With every text a
    # stream from its call, both deadlines ran out together and nothing was spoken.
    gate = _gate(tmp_path)
    timeout = 5.0

    async def steps(session: ClientSession):
        first = await session.call_tool("speak", {"text": LONG})
        await _wait_status(session, lambda s: s["speaking"])
        second = await session.call_tool("speak", {"text": "And then this, in time."})
        called = time.monotonic()
        # Past the second text's deadline as it was counted from its call (and a second for
        # the server's timer to fire): a deadline, not a guess at how long anything takes.
        while time.monotonic() < called + timeout + 1.0:
            await _wait_status(session, lambda s: True)
        gate.open()
        done = await _wait_status(session, lambda s: not s["speaking"] and s["waiting"] == 0)
        return first, second, done

    first, second, done = _run(gate, ["--request-timeout", f"{timeout:g}"], steps)
    assert not first.is_error and not second.is_error, (text_of(first), text_of(second))
    # The first text failed on its deadline or (its timer late on a loaded machine) played.
    failed = 0 if done["last_error"] is None else 1
    if failed:
        assert done["last_error"] == "no speech within the server's limit of 5 s", done
    assert done["spoken"] >= 1 and done["spoken"] + failed == 2, done


def test_a_text_queued_while_the_server_is_busy_is_taken_and_spoken(tmp_path) -> None:
    # One stream at a time and no queue: the text playing holds the only stream, yet a
    # second text is queued (it asks for no stream before its turn), and both are spoken.
    gate = _gate(tmp_path)

    async def steps(session: ClientSession):
        first = await session.call_tool("speak", {"text": "This plays first, then."})
        await _wait_status(session, lambda s: s["speaking"])
        busy = await session.call_tool("synthesize", {"text": "Hi."})
        second = await session.call_tool("speak", {"text": "And this after it."})
        gate.open()
        done = await _wait_status(session, lambda s: s["spoken"] == 2 or s["last_error"])
        return first, busy, second, done

    first, busy, second, done = _run(gate, ["--max-streams", "1", "--max-queue", "0"], steps)
    assert not first.is_error, text_of(first)
    assert busy.is_error and "busy" in text_of(busy)  # the playing text holds the stream
    assert not second.is_error and "after 1 text" in text_of(second), text_of(second)
    assert done["spoken"] == 2 and done["last_error"] is None, done
