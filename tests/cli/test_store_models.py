"""pockettts tts with models from the store (a stand-in Hub on 127.0.0.1)."""

from __future__ import annotations

import pytest
import soundfile as sf

from tests.support.cli import run
from tests.support.fakehub import (
    TINY_BF16_CONFIG,
    TINY_CONFIG,
    FakeHub,
    add_kyutai,
    running,
    subprocess_env,
)


@pytest.fixture
def hub():
    fake = FakeHub()
    add_kyutai(fake)
    with running(fake):
        yield fake


def tts(hub, tmp_path, *args, **env):
    return run("tts", *args, env=subprocess_env(hub, tmp_path, **env))


def test_config_from_the_hub_is_built_once_then_works_offline(hub, tmp_path) -> None:
    out = tmp_path / "a.wav"
    r = tts(hub, tmp_path, "Built on first use.", "--config", TINY_CONFIG, "-o", str(out), "-q")
    assert r.returncode == 0, r.stderr
    assert sf.info(out).samplerate == 24_000
    hub.clear_log()
    again = tts(
        hub,
        tmp_path,
        "From the cache.",
        "--config",
        TINY_CONFIG,
        "--offline",
        "-o",
        str(tmp_path / "b.wav"),
        "-q",
    )
    assert again.returncode == 0, again.stderr
    assert hub.requests() == []


def test_bf16_checkpoint_config_builds_and_speaks(hub, tmp_path) -> None:
    out = tmp_path / "bf16.wav"
    r = tts(
        hub, tmp_path, "Kyutai's weights are BF16.", "--config", TINY_BF16_CONFIG, "-o", str(out)
    )
    assert r.returncode == 0, r.stderr
    assert sf.info(out).frames > 0
    assert hub.requests("tiny_bf16/model.safetensors")


def test_builtin_voice_with_custom_weights_is_refused(hub, tmp_path) -> None:
    r = tts(
        hub, tmp_path, "Hi.", "--config", TINY_CONFIG, "-v", "alba", "-o", str(tmp_path / "x.wav")
    )
    assert r.returncode == 2  # two flags that cannot go together: a usage error, before any fetch
    assert b"released weights" in r.stderr and b"Traceback" not in r.stderr
    assert hub.requests() == []


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["--language", "klingon"], b"english"),
        (["--language", "dutch", "--runtime", "onnx", "-v", "nobody"], b"alba"),
    ],
)
def test_unknown_language_or_voice_lists_valid_values(hub, tmp_path, args, fragment) -> None:
    r = tts(hub, tmp_path, "Hi.", *args, "-o", str(tmp_path / "x.wav"), "--offline")
    assert r.returncode == 2, r.stderr
    assert fragment in r.stderr


def test_offline_without_cache_says_what_to_do(hub, tmp_path) -> None:
    r = tts(
        hub, tmp_path, "Hi.", "--language", "english", "--offline", "-o", str(tmp_path / "x.wav")
    )
    assert r.returncode == 1
    assert b"pockettts download" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert hub.requests() == []
