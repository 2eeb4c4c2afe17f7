"""`pockettts mcp`'s speech queue holds exactly its bound: while one text plays, eight
more wait (``defaults.MCP_MAX_QUEUE``) and the ninth is refused as a tool error that says
why, the server going on (with the admission's default limits: a waiting text holds none
of its streams); and a text to be spoken now is a stream of the admission synthesize takes
(busy beyond --max-streams and --max-queue, as one line). On ALSA's null device (behind a
gate the test opens: tests/support/soundgate.py), as tests/serve/test_mcp.py plays."""

from __future__ import annotations

import asyncio
import re
import time

import pytest

pytest.importorskip("mcp")

from mcp import ClientSession  # noqa: E402

from pocketcli.defaults import MCP_MAX_QUEUE  # noqa: E402
from tests.serve.test_mcp import _wait_status, call, text_of  # noqa: E402
from tests.support.protohelp import TINY_ARGS  # noqa: E402
from tests.support.soundgate import SoundGate  # noqa: E402
from tests.unit.audio.test_playback import NULL_ALSA, _portaudio_env, _probe  # noqa: E402


def test_the_speech_queue_holds_exactly_its_bound(tmp_path) -> None:
    gate = SoundGate(tmp_path)  # shut: the first text plays (its sink waits) until opened
    found = _probe(gate.env)
    if found == "no-portaudio":
        pytest.skip("no PortAudio library (apt-get install libportaudio2)")
    assert found == "output", "sounddevice does not see ALSA's file device"
    long_text = "This sentence keeps the speakers busy for a while. " * 80

    async def steps(session: ClientSession):
        try:
            await session.call_tool("speak", {"text": long_text})
            await _wait_status(session, lambda s: s["speaking"])  # playing: the queue is empty
            queued = [
                await session.call_tool("speak", {"text": f"Number {i}."})
                for i in range(MCP_MAX_QUEUE)
            ]
            full = await session.call_tool("speak", {"text": "One too many."})
            waiting = await _wait_status(session, lambda s: True)
            stopped = await session.call_tool("stop_speaking", {})
            return queued, full, waiting, stopped
        finally:
            gate.open()  # nothing left waiting for the device when the server stops

    # The admission's defaults (four streams, four waiting): texts waiting for the speakers
    # hold none of its streams, so the bound met is the speakers' own, never "busy" (when
    # each queued text was a stream, the eighth was refused busy).
    try:
        queued, full, waiting, stopped = call(list(TINY_ARGS), steps, gate.env)
    finally:
        gate.shut()
    assert [q.is_error for q in queued] == [False] * MCP_MAX_QUEUE, [text_of(q) for q in queued]
    assert full.is_error and f"{MCP_MAX_QUEUE} texts are already waiting" in text_of(full)
    assert "busy" not in text_of(full)
    assert waiting["waiting"] == MCP_MAX_QUEUE
    assert text_of(stopped) == f"stopped {MCP_MAX_QUEUE + 1} texts"


def test_speak_goes_through_the_admission_synthesize_takes(tmp_path) -> None:
    # One stream at a time and no queue, as test_mcp_protocol's synthesize test: of a
    # synthesize and a speak call at once (nothing playing: the text's stream is asked for
    # by the call), one is admitted and the other is told the server is busy, whichever
    # tool it is (one admission for both); then a speak while a synthesize holds the stream
    # is refused busy by the call itself.
    env = _portaudio_env(tmp_path, NULL_ALSA)
    found = _probe(env)
    if found == "no-portaudio":
        pytest.skip("no PortAudio library (apt-get install libportaudio2)")
    assert found == "output", "sounddevice does not see ALSA's null device"
    long_text = "This sentence keeps the model busy for a while. " * 40

    async def steps(session: ClientSession):
        malformed = await session.call_tool("speak", {"text": "<speak><p>Hello. There."})
        calls = [session.call_tool("synthesize", {"text": long_text})]
        calls += [session.call_tool("speak", {"text": long_text})]
        results = await asyncio.gather(*calls)
        await session.call_tool("stop_speaking", {})
        after = await _until_admitted(session)
        refused = await _until_refused(session, long_text)
        return malformed, results, after, refused

    malformed, results, after, refused = call(
        [*TINY_ARGS, "--max-streams", "1", "--max-queue", "0"], steps, env
    )
    # A text HTTP refuses is refused by the call itself, before it takes a stream.
    assert malformed.is_error and text_of(malformed).startswith("speak: "), text_of(malformed)
    assert "\n" not in text_of(malformed) and "busy" not in text_of(malformed)
    busy = [text_of(r) for r in results if r.is_error]
    assert len(busy) == 1, [text_of(r) for r in results]
    for message in [*busy, text_of(refused)]:
        assert re.fullmatch(
            r"(speak|synthesize): the server is busy; retry in \d+ s \(at most 1 at once\)",
            message,
        ), message
    assert not after.is_error, text_of(after)  # stopping the speech freed its stream
    assert text_of(refused).startswith("speak:")  # speak was refused, too


async def _until_refused(session: ClientSession, text: str, timeout: float = 60.0):
    """A speak refused busy while a synthesize of ``text`` holds the only stream, nothing
    playing: asked (and stopped) until the synthesize has the stream, which is asked for
    again whenever it is over (or was refused: the speak had the stream)."""
    deadline = time.monotonic() + timeout
    making = None
    while True:
        if making is None or making.done():
            making = asyncio.ensure_future(session.call_tool("synthesize", {"text": text}))
        await _wait_status(session, lambda s: not s["speaking"] and s["waiting"] == 0)
        result = await session.call_tool("speak", {"text": "Hi."})
        if result.is_error:
            await making
            return result
        await session.call_tool("stop_speaking", {})
        assert time.monotonic() < deadline, text_of(result)


async def _until_admitted(session: ClientSession, timeout: float = 60.0):
    """A short synthesize, asked again while a stopped stream still holds its slot (it
    leaves within a frame of being stopped)."""
    deadline = time.monotonic() + timeout
    while True:
        result = await session.call_tool("synthesize", {"text": "Hi."})
        if not (result.is_error and "busy" in text_of(result)):
            return result
        assert time.monotonic() < deadline, text_of(result)
        await asyncio.sleep(0.05)
