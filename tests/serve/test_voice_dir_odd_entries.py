"""A --voice-dir holding odd entries beside real voices (a symbolic link that points at
itself, a dangling link, a FIFO, a folder, a link to /dev/zero or out of the folder):
the real voices are still listed and spoken, and nothing is waited on. Found by
scripts/hostile_sweep.py: one link loop hid every voice of the folder ("unknown voice")."""

from __future__ import annotations

import os
import shutil

import httpx

from tests.support.cli import SCRIPT
from tests.support.servehelp import PACK, VOICE, spawn


def test_odd_entries_hide_no_voice_of_the_folder(tmp_path) -> None:
    voices = tmp_path / "voices"
    voices.mkdir()
    shutil.copy(VOICE, voices / "good.safetensors")
    (voices / "loop.safetensors").symlink_to("loop.safetensors")
    (voices / "dangling.safetensors").symlink_to(tmp_path / "gone.safetensors")
    (voices / "zero.safetensors").symlink_to("/dev/zero")
    (voices / "out.safetensors").symlink_to(VOICE)  # out of the folder: not offered
    (voices / "dir.safetensors").mkdir()
    os.mkfifo(voices / "fifo.safetensors")
    args = ("--model-dir", str(PACK), "--voice-dir", str(voices))
    with spawn(SCRIPT, *args) as (_, url), httpx.Client(base_url=url, timeout=60) as client:
        listed = [v["id"] for v in client.get("/v1/voices").json()["data"]]
        spoken = client.post(
            "/v1/audio/speech", json={"model": "tts-1", "input": "Hello.", "voice": "good"}
        )
        loop = client.post(
            "/v1/audio/speech", json={"model": "tts-1", "input": "Hello.", "voice": "loop"}
        )
    assert "good" in listed, listed
    assert not {"loop", "dangling", "zero", "out", "dir", "fifo"} & set(listed), listed
    assert spoken.status_code == 200 and len(spoken.content) > 1000, spoken.text
    assert loop.status_code == 400 and loop.json()["error"]["code"] == "voice_not_found"
