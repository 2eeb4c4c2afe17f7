"""`pockettts download` and `pockettts voices` as real subprocesses against the fake Hub."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pocketcli.packs.manifest import PackManifest
from tests.support.cli import run
from tests.support.fakehub import (
    CLONING,
    TINY_CONFIG,
    FakeHub,
    add_coreml,
    add_kyutai,
    running,
    subprocess_env,
)


@pytest.fixture
def hub():
    fake = FakeHub()
    add_kyutai(fake)
    add_coreml(fake)
    with running(fake):
        yield fake


def pockettts(hub: FakeHub, tmp_path: Path, *args: str, **env: str):
    return run(*args, text=True, env=subprocess_env(hub, tmp_path, **env))


def error_line(result) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


def test_download_coreml_int8_keeps_only_the_int8_flowlm(hub, tmp_path) -> None:
    r = pockettts(
        hub,
        tmp_path,
        "download",
        "--runtime",
        "coreml",
        "--language",
        "english",
        "--precision",
        "int8",
    )
    assert r.returncode == 0, r.stderr
    language, folder = r.stdout.strip().split("\t")
    pack = Path(folder)
    assert language == "english" and pack.parts[-2:] == ("v2.1", "english")
    assert (pack / "flowlm_stepv2.mlmodelc").is_dir()
    assert not (pack / "flowlm_step.mlmodelc").exists()
    assert not any("flowlm_step.mlmodelc" in q.path for q in hub.requests())
    assert "pockettts: downloading the CoreML english pack" in r.stderr
    assert all(line.startswith("pockettts: ") for line in r.stderr.splitlines()), r.stderr
    # Offline, the same command answers from the cache without a single request.
    hub.clear_log()
    again = pockettts(
        hub, tmp_path, "download", "--runtime", "coreml", "--precision", "int8", "--offline", "-q"
    )
    assert again.returncode == 0, again.stderr
    assert again.stdout == r.stdout and again.stderr == ""
    assert hub.requests() == []


def test_download_onnx_config_builds_a_pack_falling_back_from_gated_weights(hub, tmp_path) -> None:
    hub.gated.add(CLONING)
    r = pockettts(
        hub,
        tmp_path,
        "download",
        "--runtime",
        "onnx",
        "--config",
        TINY_CONFIG,
        "--precision",
        "int8",
    )
    assert r.returncode == 0, r.stderr
    pack = Path(r.stdout.strip().split("\t")[1])
    manifest = PackManifest.read(pack)
    assert manifest.precisions == ("int8",)
    assert manifest.source["voice_cloning_weights"] is False
    assert "note: the Hub refused kyutai/pocket-tts (HTTP 401)" in r.stderr
    assert "pockettts: building pack:" in r.stderr
    assert all(line.startswith("pockettts: ") for line in r.stderr.splitlines()), r.stderr
    hub.clear_log()
    again = pockettts(
        hub,
        tmp_path,
        "download",
        "--runtime",
        "onnx",
        "--config",
        TINY_CONFIG,
        "--precision",
        "int8",
        "-q",
        HF_HUB_OFFLINE="1",
    )
    assert again.returncode == 0, again.stderr
    assert again.stdout == r.stdout
    assert hub.requests() == []


def test_voices_json_marks_downloads_and_origins(hub, tmp_path) -> None:
    r = pockettts(hub, tmp_path, "download", "--runtime", "coreml", "-q")
    assert r.returncode == 0, r.stderr
    hub.clear_log()
    listed = pockettts(hub, tmp_path, "voices", "--json")
    assert listed.returncode == 0, listed.stderr
    data = json.loads(listed.stdout)
    assert data["language"] == "english"
    voices = {v["name"]: v for v in data["voices"]}
    assert len(voices) == 26 and "daan" not in voices
    assert voices["alba"]["default"] is True
    assert voices["lola"]["origin"] == "spanish" and voices["marius"]["origin"] == "english"
    assert all(v["downloaded"] == {"onnx": False, "coreml": True} for v in voices.values())
    assert hub.requests() == []
    dutch = json.loads(pockettts(hub, tmp_path, "voices", "--language", "dutch", "--json").stdout)
    assert {v["name"] for v in dutch["voices"]} >= {"daan", "alba"}
    table = pockettts(hub, tmp_path, "voices", "--language", "spanish")
    assert table.returncode == 0
    assert any(
        line.split()[:2] == ["lola", "spanish"] and "spanish's own" in line
        for line in table.stdout.splitlines()
    )


@pytest.mark.parametrize(
    "args, env, expected",
    [
        (
            ["download", "--runtime", "coreml", "--offline"],
            {},
            "not in the cache and --offline (or HF_HUB_OFFLINE) forbids downloading it",
        ),
        (
            ["download", "--runtime", "onnx", "--config", TINY_CONFIG],
            {"HF_HUB_OFFLINE": "1"},
            "run `pockettts download --runtime onnx --config",
        ),
    ],
)
def test_offline_without_cache_is_one_line_and_no_request(
    hub, tmp_path, args, env, expected
) -> None:
    r = pockettts(hub, tmp_path, *args, **env)
    assert r.returncode == 1
    assert expected in error_line(r)
    assert hub.requests() == []


def test_stalled_hub_ends_at_the_deadline_with_one_line(hub, tmp_path) -> None:
    hub.hang = True
    r = pockettts(
        hub, tmp_path, "download", "--runtime", "coreml", "-q", POCKETTTS_HUB_TIMEOUT="0.5"
    )
    assert r.returncode == 1
    line = error_line(r)
    assert line.startswith("pockettts: error: no answer from 127.0.0.1")
    assert "within 0.5 s" in line


@pytest.mark.parametrize(
    "args, fragment",
    [
        (
            ["download", "--runtime", "coreml", "--precision", "fp32"],
            "'fp32' for the coreml runtime; choose from fp16, int8",
        ),
        (["download", "--runtime", "onnx", "--precision", "fp16"], "choose from fp32, int8"),
        (["download", "--runtime", "coreml", "--language", "dutch"], "choose from english,"),
        (["download", "--runtime", "tpu"], "choose from auto, onnx, coreml"),
        (["download", "--language", "english", "--voice", "bob"], "choose from alba,"),
        (["voices", "--language", "klingon"], "choose from dutch, dutch_24l, english"),
    ],
)
def test_values_a_runtime_cannot_honour_are_usage_errors(hub, tmp_path, args, fragment) -> None:
    r = pockettts(hub, tmp_path, *args)
    assert r.returncode == 2, r.stderr
    assert fragment in r.stderr
    assert hub.requests() == []


def test_help_shows_examples(hub, tmp_path) -> None:
    for command in ("download", "voices"):
        r = pockettts(hub, tmp_path, command, "--help")
        assert r.returncode == 0 and "Examples:" in r.stdout
        assert f"pockettts {command}" in r.stdout.split("Examples:")[1]
