"""Cloning on a browser pack (issue 32 item 7): the layout has no encoder, so the answer
says where to clone instead, never "log in to Hugging Face and rebuild" (which cannot
help). Through the CLI's ``clone`` and the server's ``POST /v1/voices``, on a real
exported browser pack."""

from __future__ import annotations

import httpx

from tests.support.cli import run
from tests.support.paths import TINY
from tests.support.servehelp import serving
from tests.support.webhelp import tiny_web_pack

CLIP = TINY / "clone_prompt_24k.wav"


def _says_where_to_clone(message: str) -> None:
    assert "browser pack has no Mimi encoder" in message, message
    assert "hf auth login" not in message and "rebuild" not in message, message
    assert "pockettts clone" in message and "voice file" in message, message


def test_the_cli_says_where_to_clone(tmp_path) -> None:
    out = tmp_path / "me.safetensors"
    r = run("clone", CLIP, "--model-dir", tiny_web_pack(), "-o", out, text=True)
    assert r.returncode == 1 and not out.exists()
    assert len(r.stderr.splitlines()) == 1
    _says_where_to_clone(r.stderr)


def _browser_backend():
    from pocketcli.cli.model_options import ModelFlags
    from pocketcli.frontends.backend import load_backend

    choice = ModelFlags(model_dir=tiny_web_pack(), offline=True).request(quiet=True)
    return load_backend(choice, None, None)


def test_the_server_says_where_to_clone() -> None:
    with serving(_browser_backend) as (url, _records):
        r = httpx.post(f"{url}/v1/voices", files={"file": ("me.wav", CLIP.read_bytes())},
                       timeout=120)  # fmt: skip
    assert 400 <= r.status_code < 500, r.text
    _says_where_to_clone(r.json()["error"]["message"])
