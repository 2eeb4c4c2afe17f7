"""A voice file's warning (tensors that are no part of a voice) reaches the server's log
as one of its structured lines, whichever way the voice was loaded: the default voice
(``--voice-file``), a ``--voice-dir`` voice and a pack's own voice. It used to reach
stderr as a raw Python ``warnings`` line (``VoiceWarning`` and the source line)."""

from __future__ import annotations

import warnings
from pathlib import Path

import httpx
import numpy as np
from safetensors.numpy import load_file, save_file

from pocketcli.serve.limits import ServeSettings
from tests.support.servehelp import PACK, VOICE, serving, tiny_loader


def _with_extra_tensor(path: Path) -> Path:
    tensors = load_file(str(VOICE))
    tensors["not_a_voice"] = np.zeros(3, np.float32)
    save_file(tensors, str(path))
    return path


def test_voice_warnings_are_server_log_lines(tmp_path: Path) -> None:
    pack = tmp_path / "pack"
    pack.mkdir()
    for f in PACK.iterdir():
        (pack / f.name).symlink_to(f)
    (pack / "voices").mkdir()
    _with_extra_tensor(pack / "voices" / "packed.safetensors")
    folder = tmp_path / "voices"
    folder.mkdir()
    _with_extra_tensor(folder / "foldered.safetensors")
    default = _with_extra_tensor(tmp_path / "default.safetensors")
    settings = ServeSettings(voice_dir=folder)
    with warnings.catch_warnings(record=True) as raw:
        warnings.simplefilter("always")
        with serving(tiny_loader(pack, voice_file=default), settings) as (url, records):
            for voice in ("foldered", "packed"):
                body = {"model": "tts-1", "input": "Hi.", "voice": voice, "seed": 1}
                r = httpx.post(f"{url}/v1/audio/speech", json=body, timeout=60)
                assert r.status_code == 200, r.text
            said = [r for r in records.records if r.get("levelname") == "WARNING"]
    assert [w.message for w in raw if "not_a_voice" in str(w.message)] == []
    shown = [str(r.get("warning")) for r in said]
    for name in ("default", "foldered", "packed"):
        assert any(f"{name}.safetensors: ignored 1 tensor(s)" in s for s in shown), shown
