"""`pockettts mcp`'s speech queue holds exactly its bound: while one text plays, eight
more wait (``defaults.MCP_MAX_QUEUE``) and the ninth is refused as a tool error that says
why, the server going on. On ALSA's null device, as tests/serve/test_mcp.py plays."""

from __future__ import annotations

import pytest

pytest.importorskip("mcp")

from mcp import ClientSession  # noqa: E402

from pocketcli.defaults import MCP_MAX_QUEUE  # noqa: E402
from tests.serve.test_mcp import _wait_status, call, text_of  # noqa: E402
from tests.support.protohelp import TINY_ARGS  # noqa: E402
from tests.unit.audio.test_playback import NULL_ALSA, _portaudio_env, _probe  # noqa: E402


def test_the_speech_queue_holds_exactly_its_bound(tmp_path) -> None:
    env = _portaudio_env(tmp_path, NULL_ALSA)
    found = _probe(env)
    if found == "no-portaudio":
        pytest.skip("no PortAudio library (apt-get install libportaudio2)")
    assert found == "output", "sounddevice does not see ALSA's null device"
    long_text = "This sentence keeps the speakers busy for a while. " * 80

    async def steps(session: ClientSession):
        await session.call_tool("speak", {"text": long_text})
        await _wait_status(session, lambda s: s["speaking"])  # playing: the queue is empty
        queued = [
            await session.call_tool("speak", {"text": f"Number {i}."}) for i in range(MCP_MAX_QUEUE)
        ]
        full = await session.call_tool("speak", {"text": "One too many."})
        waiting = await _wait_status(session, lambda s: True)
        stopped = await session.call_tool("stop_speaking", {})
        return queued, full, waiting, stopped

    queued, full, waiting, stopped = call(list(TINY_ARGS), steps, env)
    assert [q.is_error for q in queued] == [False] * MCP_MAX_QUEUE, [text_of(q) for q in queued]
    assert full.is_error and f"{MCP_MAX_QUEUE} texts are already waiting" in text_of(full)
    assert waiting["waiting"] == MCP_MAX_QUEUE
    assert text_of(stopped) == f"stopped {MCP_MAX_QUEUE + 1} texts"
