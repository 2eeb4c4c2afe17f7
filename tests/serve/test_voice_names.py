"""`pockettts serve --voice-dir`: a request's voice names a file of that folder by its exact
stem, and nothing near it does (a prefix, a suffix, another case, the file's own name, a
path); a symlink out of the folder, even into a sibling folder whose name starts the same,
is not a voice. OpenAI's names mean the default voice in any case. Real server process,
real client."""

from __future__ import annotations

import shutil

import httpx
import pytest

from tests.support.cli import SCRIPT
from tests.support.servehelp import PACK, VOICE, spawn


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("voices")
    voices, sibling = root / "voices", root / "voices2"
    voices.mkdir()
    sibling.mkdir()
    shutil.copy(VOICE, voices / "narrator.safetensors")
    shutil.copy(VOICE, sibling / "ghost.safetensors")
    (voices / "ghost.safetensors").symlink_to(sibling / "ghost.safetensors")
    (voices / "alias.safetensors").symlink_to(voices / "narrator.safetensors")  # inside: fine
    args = ("--model-dir", str(PACK), "--voice-file", str(VOICE), "--voice-dir", str(voices))
    with spawn(SCRIPT, *args) as (_, url):
        yield url


def _speak(url: str, voice: str) -> httpx.Response:
    body = {"model": "tts-1", "input": "Hi.", "voice": voice, "response_format": "pcm"}
    return httpx.post(f"{url}/v1/audio/speech", json=body, timeout=60)


@pytest.mark.parametrize("voice", ["narrator", "alias", "alloy", "Alloy", "NOVA"])
def test_the_folders_voices_by_stem_and_openais_names_are_spoken(server, voice) -> None:
    r = _speak(server, voice)
    assert r.status_code == 200, r.text
    assert len(r.content) > 0


@pytest.mark.parametrize(
    "voice",
    [
        "narrato",  # a prefix
        "narrator2",  # a suffix
        "xnarrator",
        "Narrator",  # another case
        "NARRATOR",
        "narrator.safetensors",  # the file's name, not its stem
        "./narrator",
        "../voices/narrator",
        "ghost",  # a symlink into the sibling folder voices2
        "alloys",
    ],
)
def test_names_near_a_voice_are_not_it(server, voice) -> None:
    r = _speak(server, voice)
    assert r.status_code == 400, (voice, r.status_code)
    assert r.json()["error"]["code"] == "voice_not_found"


def test_the_list_holds_the_folders_own_voices_only(server) -> None:
    listed = httpx.get(f"{server}/v1/voices", timeout=60).json()
    names = {v.get("id") or v.get("name") for v in listed.get("data", listed.get("voices", []))}
    assert {"narrator", "alias"} <= names and "ghost" not in names, listed
