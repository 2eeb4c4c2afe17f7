"""`pockettts mcp` through the reference SDK's own stdio client (list_tools, call_tool),
as an MCP client starts it: the tools, audio back as WAV, files only in the allowed
folder, speech on a (null) sound device, errors as results, SIGTERM, the missing extra."""

from __future__ import annotations

import asyncio
import base64
import io
import os
import shutil
import signal
import subprocess
import time

import pytest

from tests.support.paths import ROOT

pytest.importorskip("mcp")

import soundfile as sf  # noqa: E402
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

from tests.support.cli import SCRIPT, cli_env, run  # noqa: E402
from tests.support.protohelp import TINY_ARGS, VOICE, one_line, spawn, without_module  # noqa: E402
from tests.support.soundgate import SoundGate  # noqa: E402
from tests.unit.audio.test_playback import _portaudio_env, _probe  # noqa: E402


def call(args: list[str], steps, env: dict[str, str] | None = None):
    """Starts the server as an MCP client does and runs ``steps(session)`` on it. The
    SDK passes a server only HOME, PATH and a few more unless told: without this test
    process's environment (PYTHONPATH among it) the server would run whatever pocketcli
    is installed, not the code under test (a scratch copy's, under scripts/mutate.py)."""
    env = cli_env() if env is None else env

    async def go():
        params = StdioServerParameters(command=SCRIPT, args=["mcp", *args], env=env)
        with open(os.devnull, "w") as quiet:
            async with (
                stdio_client(params, errlog=quiet) as streams,
                ClientSession(*streams) as session,
            ):
                await session.initialize()
                return await steps(session)

    return asyncio.run(asyncio.wait_for(go(), 120))


def text_of(result) -> str:
    return "\n".join(c.text for c in result.content if c.type == "text")


def test_tools_and_synthesize_returns_wav_and_writes_only_where_allowed(tmp_path) -> None:
    voices, out = tmp_path / "voices", tmp_path / "out"
    voices.mkdir()
    out.mkdir()
    shutil.copy(VOICE, voices / "bob.safetensors")
    (tmp_path / "elsewhere").mkdir()
    (out / "escape").symlink_to(tmp_path / "elsewhere")

    async def steps(session: ClientSession):
        tools = {t.name: t for t in (await session.list_tools()).tools}
        listed = await session.call_tool("list_voices", {})
        made = await session.call_tool(
            "synthesize", {"text": "Hello there.", "voice": "bob", "path": "hi.wav"}
        )
        refused = [
            await session.call_tool("synthesize", {"text": "Hi.", "path": path})
            for path in (str(tmp_path / "x.wav"), "../x.wav", "escape/x.wav", "/etc/x.wav")
        ]
        errors = [
            await session.call_tool(name, arguments)
            for name, arguments in (
                ("synthesize", {"text": "Hi.", "voice": "/etc/passwd"}),
                ("synthesize", {"text": "word " * 100}),
                ("synthesize", {"text": "  "}),
                ("synthesize", {"text": "Hi.", "language": "german"}),
            )
        ]
        still = await session.call_tool("status", {})
        return tools, listed, made, refused, errors, still

    args = [*TINY_ARGS, "--voice-dir", str(voices), "--output-dir", str(out), "--max-chars", "300"]
    tools, listed, made, refused, errors, still = call(args, steps)
    assert set(tools) == {"speak", "stop_speaking", "status", "list_voices", "synthesize"}
    assert set(tools["speak"].input_schema["properties"]) == {
        "text",
        "voice",
        "language",
        "interrupt",
        "speed",
    }
    assert listed.structured_content == {
        "language": "english",
        "default": "voice",
        "voices": ["voice", "bob"],
    }
    assert not made.is_error, text_of(made)
    (audio,) = [c for c in made.content if c.type == "audio"]
    assert audio.mime_type == "audio/wav"
    samples, rate = sf.read(io.BytesIO(base64.b64decode(audio.data)), dtype="int16")
    assert rate == 24000 and samples.ndim == 1 and samples.size > 4 * 1920
    written, written_rate = sf.read(out / "hi.wav", dtype="int16")
    assert written_rate == 24000 and (written == samples).all()  # the same speech, both ways
    for result in refused:
        assert result.is_error and "is not inside the folder" in text_of(result), text_of(result)
    assert sorted(p.name for p in tmp_path.rglob("x.wav")) == []
    messages = [text_of(r) for r in errors]
    assert all(r.is_error for r in errors), messages
    assert "reads no path" in messages[0]
    assert "over the limit of 300" in messages[1]
    assert "text is empty" in messages[2]
    assert "speaks english, not 'german'" in messages[3] and "--language german" in messages[3]
    assert not still.is_error  # the server kept serving


def _status(result) -> dict:
    assert not result.is_error, text_of(result)
    return result.structured_content


async def _wait_status(session: ClientSession, ok, timeout: float = 60.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        status = _status(await session.call_tool("status", {}))
        if ok(status):
            return status
        assert time.monotonic() < deadline, status
        await asyncio.sleep(0.05)


def test_speak_plays_on_the_device_in_turn_and_stops(tmp_path) -> None:
    gate = SoundGate(tmp_path)
    found = _probe(gate.env)
    if found == "no-portaudio":
        pytest.skip("no PortAudio library (apt-get install libportaudio2)")
    assert found == "output", "sounddevice does not see ALSA's file device"
    # While the gate is shut a text's sink waits to open: the text playing cannot end
    # before the stop (on ALSA's bare null device it ends within a second, load or not).
    # Longer than the frames made ahead of the speakers: stopped, it can only fail.
    long_text = "This sentence keeps the speakers busy for a while. " * 80

    async def steps(session: ClientSession):
        try:
            first = await session.call_tool("speak", {"text": long_text})
            second = await session.call_tool("speak", {"text": "And then this."})
            playing = await _wait_status(session, lambda s: s["speaking"])
            stopped = await session.call_tool("stop_speaking", {})
            gate.open()  # the stopped text's sink opens: it must not play on
            idle = await _wait_status(session, lambda s: not s["speaking"])
            gate.shut()  # no sink is open: the next one waits again
            await session.call_tool("speak", {"text": long_text})
            await _wait_status(session, lambda s: s["speaking"])
            cut = await session.call_tool("speak", {"text": "Right now.", "interrupt": True})
            gate.open()
            done = await _wait_status(session, lambda s: s["spoken"] >= 1 and not s["speaking"])
            return first, second, playing, stopped, idle, cut, done
        finally:
            gate.open()  # nothing left waiting for the device when the server stops

    try:
        first, second, playing, stopped, idle, cut, done = call(list(TINY_ARGS), steps, gate.env)
    finally:
        gate.shut()
    assert "now" in text_of(first) and "after 1 text" in text_of(second)
    assert playing["voice"] == "voice" and playing["text"].startswith("This sentence")
    assert text_of(stopped) == "stopped 2 texts"
    assert idle["waiting"] == 0 and idle["spoken"] == 0 and idle["last_error"] is None
    assert not cut.is_error and "after 1 text" in text_of(cut), text_of(cut)
    assert done["spoken"] == 1 and done["waiting"] == 0 and done["last_error"] is None


def test_no_sound_device_nor_output_dir_are_said_and_the_server_goes_on(tmp_path) -> None:
    env = _portaudio_env(tmp_path, None)
    if _probe(env) != "none":
        pytest.skip("this machine has a sound device (or no PortAudio)")

    async def steps(session: ClientSession):
        spoken = await session.call_tool("speak", {"text": "Hi."})
        written = await session.call_tool("synthesize", {"text": "Hi.", "path": "hi.wav"})
        return spoken, written, await session.call_tool("list_voices", {})

    spoken, written, listed = call(list(TINY_ARGS), steps, env)
    assert spoken.is_error and "no sound output device" in text_of(spoken)
    assert "synthesize returns the audio" in text_of(spoken)
    assert written.is_error and "--output-dir" in text_of(written)
    assert not listed.is_error


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_sigterm_and_ctrl_c_end_the_server_quietly(signum, status) -> None:
    with spawn("mcp", *TINY_ARGS, stdin=subprocess.PIPE, stdout=subprocess.PIPE) as (proc, err):
        err.wait_event("ready")
        proc.send_signal(signum)
        assert proc.wait(30) == status
        err.join(30)
    assert "pockettts: error" not in err.text()  # a server's normal stop: no error line
    assert "Traceback" not in err.text()


def test_bad_flags_and_the_missing_extra_are_one_line(tmp_path) -> None:
    r = run("mcp", *TINY_ARGS, "--output-dir", str(tmp_path / "none"))
    assert r.returncode == 1 and b"--output-dir is not a folder" in r.stderr, r.stderr
    r = without_module("mcp", "mcp")
    assert r.returncode == 1
    assert "pip install 'pockettts[mcp]'" in one_line(r.stderr)


def test_readme_snippet_is_what_the_help_shows() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert '"command": "pockettts", "args": ["mcp"]' in readme
