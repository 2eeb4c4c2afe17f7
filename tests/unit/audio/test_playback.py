"""Playback: the jitter buffer, a fake sink for exact samples, and a real PortAudio device.

The real device is ALSA's null PCM (``pcm.!default { type null }`` in a config
named by ALSA_CONFIG_PATH): PortAudio opens it and pulls audio from the
callback like from a sound card. It needs the PortAudio library
(``apt-get install libportaudio2``, done by .ci/run); without it those tests skip.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from pocketcli import PocketTTS
from pocketcli.audio.playback import JitterBuffer
from pocketcli.options import SpeakOptions
from pocketcli.session import play_session
from tests.support.cli import run
from tests.support.fakesink import RecordingSink

NULL_ALSA = """pcm.!default {
    type null
}
ctl.!default {
    type hw
    card 0
}
"""


# -- the jitter buffer ----------------------------------------------------------
def _pull(buffer: JitterBuffer, n: int) -> np.ndarray:
    out = np.full(n, np.nan, np.float32)
    buffer.pull(out)
    return out


def test_jitter_buffer_waits_for_its_prebuffer_then_plays_in_order() -> None:
    buffer = JitterBuffer(prebuffer=6)
    audio = np.arange(1, 13, dtype=np.float32)
    buffer.push(audio[:4])
    assert np.array_equal(_pull(buffer, 3), np.zeros(3))  # not started: silence, no underrun
    buffer.push(audio[4:])
    played = np.concatenate([_pull(buffer, 5), _pull(buffer, 5)])
    assert np.array_equal(played, audio[:10])
    assert buffer.underruns == 0 and buffer.min_margin == 2
    tail = _pull(buffer, 5)  # runs dry in mid-stretch
    assert np.array_equal(tail, [11, 12, 0, 0, 0])
    assert buffer.underruns == 1 and buffer.played == 12


def test_a_flushed_stretch_plays_out_below_the_prebuffer_without_an_underrun() -> None:
    buffer = JitterBuffer(prebuffer=100)
    buffer.push(np.ones(7, np.float32))
    buffer.flush()
    assert np.array_equal(_pull(buffer, 10), [1] * 7 + [0] * 3)
    assert buffer.underruns == 0 and buffer.wait_empty(0)
    buffer.push(np.ones(3, np.float32))  # a new stretch waits for the prebuffer again
    assert not buffer.wait_empty(0)
    assert np.array_equal(_pull(buffer, 3), np.zeros(3))


# -- exact samples through a fake sink ----------------------------------------------
@pytest.fixture(scope="module")
def tts(pack_dir) -> PocketTTS:
    return PocketTTS.open(runtime="onnx", model_dir=pack_dir)


def test_the_sink_gets_the_frames_as_they_are_made(tts, voice_path) -> None:
    voice = tts.voices.load(voice_path)
    options = SpeakOptions(seed=4)  # with the output chain's filters, as tts plays them
    texts = ["One line.", "And another one."]
    with tts.session(voice, options) as reference:
        for text in texts:
            reference.enqueue(text)
        reference.finish()
        expected = [f.audio for f in reference]
    first_alone = [f.audio for f in tts.stream(texts[0], voice, options)]

    sink = RecordingSink()
    recorded: list[np.ndarray] = []
    session = tts.session(voice, options)
    session.enqueue(texts[0])
    session.enqueue(texts[1])
    session.finish()
    figures = play_session(session, [sink], record=recorded)
    assert len(sink.writes) == len(expected) == len(recorded)
    assert all(np.array_equal(a, b) for a, b in zip(sink.writes, expected, strict=True))
    assert all(np.array_equal(a, b) for a, b in zip(sink.writes, first_alone, strict=False))
    assert sink.flushes == [sum(a.size for a in expected)]  # flushed once, at the end
    assert figures["audio"] == sum(a.size for a in expected)
    raw = [f.audio for f in tts.stream(texts[0], voice, options.with_(output_chain=False))]
    assert not np.array_equal(sink.writes[1], raw[1])  # the filters did run


# -- a real PortAudio device --------------------------------------------------------
def _portaudio_env(tmp_path: Path, config: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("POCKETTTS_DEBUG", "ALSA_CONFIG_PATH")}
    if config is not None:
        path = tmp_path / "asound.conf"
        path.write_text(config, encoding="utf-8")
        env["ALSA_CONFIG_PATH"] = str(path)
    return env


def _probe(env: dict[str, str]) -> str:
    """What sounddevice finds in ``env``: 'output', 'none' or 'no-portaudio'."""
    code = (
        "import sys\n"
        "try:\n import sounddevice as sd\nexcept OSError:\n print('no-portaudio'); sys.exit()\n"
        "try:\n sd.query_devices(kind='output'); print('output')\n"
        "except sd.PortAudioError:\n print('none')\n"
    )
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, timeout=60)
    return r.stdout.decode().strip()


@pytest.fixture
def null_device(tmp_path) -> dict[str, str]:
    env = _portaudio_env(tmp_path, NULL_ALSA)
    found = _probe(env)
    if found == "no-portaudio":
        pytest.skip("no PortAudio library (apt-get install libportaudio2)")
    assert found == "output", "sounddevice does not see ALSA's null device"
    return env


def test_play_to_a_real_device_and_still_write_the_file(
    null_device, pack_dir, voice_path, tmp_path
) -> None:
    common = ["--model-dir", str(pack_dir), "--voice-file", str(voice_path), "--seed", "3"]
    played, plain = tmp_path / "played.wav", tmp_path / "plain.wav"
    metrics = ["--metrics", str(tmp_path / "metrics.json")]
    r = run("tts", "Out loud.", "--play", "-o", str(played), *metrics, *common, env=null_device)
    assert r.returncode == 0, r.stderr
    assert b"speakers" in r.stderr
    figures = json.loads((tmp_path / "metrics.json").read_text())
    assert figures["audio_duration_s"] == pytest.approx(sf.info(played).frames / 24_000)
    r = run("tts", "Out loud.", "-o", str(plain), *common)
    assert r.returncode == 0, r.stderr
    assert played.read_bytes() == plain.read_bytes()


def test_play_at_a_speed_plays_and_writes_the_stretched_speech(
    null_device, pack_dir, voice_path, tmp_path
) -> None:
    """Issue 36: --play takes --speed like -o: the file written beside the playback is
    the stretched speech (the same bytes as without --play), its metrics count it."""
    common = ["--model-dir", str(pack_dir), "--voice-file", str(voice_path), "--seed", "3"]
    played, plain, normal = (tmp_path / f"{n}.wav" for n in ("played", "plain", "normal"))
    metrics = ["--metrics", str(tmp_path / "metrics.json")]
    text = "Out loud, and twice as fast as before."
    r = run("tts", text, "--play", "--speed", "2", "-o", str(played), *metrics, *common,
            env=null_device)  # fmt: skip
    assert r.returncode == 0, r.stderr
    figures = json.loads((tmp_path / "metrics.json").read_text())
    assert figures["audio_duration_s"] == pytest.approx(sf.info(played).frames / 24_000)
    assert run("tts", text, "--speed", "2", "-o", str(plain), *common).returncode == 0
    assert played.read_bytes() == plain.read_bytes()
    assert run("tts", text, "-o", str(normal), *common).returncode == 0
    assert sf.info(played).frames == pytest.approx(sf.info(normal).frames / 2, rel=0.02)


def test_play_alone_writes_no_file_and_a_device_can_be_named(
    null_device, pack_dir, tmp_path
) -> None:
    r = run(
        "tts",
        "Only sound.",
        "--play",
        "--device",
        "default",
        "--model-dir",
        str(pack_dir),
        env=null_device,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / "output.wav").exists()


def test_an_unknown_device_is_one_line(null_device, pack_dir) -> None:
    r = run(
        "tts",
        "x",
        "--play",
        "--device",
        "no-such-card",
        "--model-dir",
        str(pack_dir),
        env=null_device,
    )
    assert r.returncode == 1
    lines = r.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and "no-such-card" in lines[0] and "Traceback" not in lines[0]


def test_no_output_device_is_one_line(pack_dir, tmp_path) -> None:
    env = _portaudio_env(tmp_path, None)
    found = _probe(env)
    if found != "none":
        pytest.skip(f"this machine has {found!r}, not PortAudio without devices")
    r = run("tts", "x", "--play", "--model-dir", str(pack_dir), env=env)
    assert r.returncode == 1
    lines = r.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and "no sound output device" in lines[0] and "-o" in lines[0]


def test_no_portaudio_says_what_to_install(pack_dir, tmp_path) -> None:
    # sounddevice's own failure when the library is missing, in front of the real one.
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "sounddevice.py").write_text("raise OSError('PortAudio library not found')\n")
    env = _portaudio_env(tmp_path, None)
    env["PYTHONPATH"] = os.pathsep.join([str(shadow), env.get("PYTHONPATH", "")])
    r = run("tts", "x", "--play", "--model-dir", str(pack_dir), env=env)
    assert r.returncode == 1
    lines = r.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and "libportaudio2" in lines[0] and "pockettts[play]" in lines[0]


def test_follow_plays_each_line(null_device, pack_dir, tmp_path) -> None:
    kept = tmp_path / "kept.wav"
    args = ["--follow", "--play", "-o", str(kept), "--model-dir", str(pack_dir), "--seed", "1"]
    r = run("tts", *args, env=null_device, stdin=b"First line.\nSecond line.\n")
    assert r.returncode == 0, r.stderr
    assert b"speakers and " in r.stderr
    one = tmp_path / "one.wav"
    assert run("tts", "First line.", "-o", str(one), *args[4:]).returncode == 0
    assert sf.info(kept).frames > sf.info(one).frames  # both lines, in one file
