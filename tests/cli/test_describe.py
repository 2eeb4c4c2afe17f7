"""Commands that describe: `inspect` on a recording, `help`
(real subprocess runs on the tiny pack and the committed tiny recording)."""

from __future__ import annotations

import json

from tests.support.cli import run
from tests.support.paths import FIXTURES

RECORDING = FIXTURES / "tiny" / "clone_prompt_24k.wav"


def test_inspect_describes_a_recording() -> None:
    import soundfile as sf

    info = sf.info(str(RECORDING))
    report = json.loads(run("inspect", str(RECORDING), "--json").stdout)
    assert report["kind"] == "recording"
    assert report["sample_rate"] == info.samplerate and report["channels"] == info.channels
    assert abs(report["seconds"] - info.duration) < 1e-3
    text = run("inspect", str(RECORDING)).stdout.decode()
    assert "recording" in text and "--clone-voice" in text


def test_help_is_the_commands_help() -> None:
    assert run("help", "tts").stdout == run("tts", "--help").stdout
    root = run("help")
    assert root.returncode == 0 and root.stdout == run("--help").stdout
    assert b"help " in root.stdout.split(b"Commands:")[1]
    unknown = run("help", "nope")
    assert unknown.returncode == 2 and b"No such command 'nope'" in unknown.stderr
