"""Every error the server writes is OpenAI's shape and says no more than the client needs
(no server path, no exception name); what OpenAI's SDK and pocket-tts's page rely on holds."""

from __future__ import annotations

import json
import struct

import httpx
import openai
import pytest

from pocketcli.serve.limits import Limits, ServeSettings
from tests.support.servehelp import TINY, serving

CLONE_WAV = TINY / "clone_prompt_24k.wav"


@pytest.fixture(scope="module")
def deep_voice_dir(tmp_path_factory):
    """A voice folder with one file whose safetensors header is JSON nested 100000 deep."""
    folder = tmp_path_factory.mktemp("voices")
    header = b'{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    (folder / "deep.safetensors").write_bytes(struct.pack("<Q", len(header)) + header)
    return folder


@pytest.fixture(scope="module")
def server(deep_voice_dir):
    with serving(settings=ServeSettings(voice_dir=deep_voice_dir)) as (url, records):
        yield url


def _openai_shape(r: httpx.Response) -> dict:
    body = r.json()
    error = body["error"]
    assert set(error) == {"message", "type", "code", "param"}, body
    assert isinstance(error["message"], str) and error["message"]
    assert error["type"] == ("server_error" if r.status_code >= 500 else "invalid_request_error")
    return error


@pytest.mark.parametrize(
    "method, path, kwargs, status",
    [
        ("GET", "/no/such/thing", {}, 404),
        ("GET", "/v1/models/not-a-model", {}, 404),
        ("DELETE", "/v1/voices/clone-nothing", {}, 404),
        ("PUT", "/v1/audio/speech", {}, 405),
        ("POST", "/v1/audio/speech", {"json": {"model": "tts-1"}}, 400),
        ("POST", "/tts", {"data": {"voice_url": "alba"}}, 400),  # no text field
        ("POST", "/v1/voices", {"data": {"x": "y"}}, 400),  # no file part
        ("POST", "/v1/voices", {"files": {"file": ("x.wav", b"RIFF nonsense")}}, 400),
    ],
)
def test_every_error_has_openai_shape(server, method, path, kwargs, status) -> None:
    r = httpx.request(method, f"{server}{path}", timeout=60, **kwargs)
    assert r.status_code == status, r.text
    _openai_shape(r)


def test_head_healthz_is_200(server) -> None:
    r = httpx.head(f"{server}/healthz", timeout=60)
    assert r.status_code == 200 and r.content == b""


def test_a_damaged_folder_voice_is_a_clean_error(server, deep_voice_dir) -> None:
    r = httpx.post(
        f"{server}/v1/audio/speech",
        json={"model": "tts-1", "input": "Hi.", "voice": "deep", "response_format": "wav"},
        timeout=60,
    )
    assert r.status_code == 500
    error = _openai_shape(r)
    assert error["code"] == "voice_unreadable" and "'deep'" in error["message"]
    assert "Recursion" not in r.text and str(deep_voice_dir) not in r.text


def test_library_messages_reach_clients_without_server_paths(server) -> None:
    # A recording the library cannot read: its message names the upload, never a path here.
    r = httpx.post(
        f"{server}/v1/voices", files={"file": ("../../etc/x.wav", b"RIFF\0\0\0\0WAVEjunk")}
    )
    assert r.status_code == 400
    message = _openai_shape(r)["message"]
    assert "'x.wav'" in message and "etc" not in message and ".." not in message
    from pocketcli.serve.apierrors import redact_paths

    said = redact_paths(f"cannot read {TINY}/voice.safetensors: damaged; see hf://kyutai/a/b")
    assert str(TINY) not in said and "hf://kyutai/a/b" in said


def test_response_format_in_any_case(server) -> None:
    body = {"model": "tts-1", "input": "Loud.", "voice": "alloy", "response_format": "WAV"}
    r = httpx.post(f"{server}/v1/audio/speech", json=body, timeout=60)
    assert r.status_code == 200 and r.content[:4] == b"RIFF"
    form = httpx.post(f"{server}/tts", data={"text": "Form.", "response_format": "Pcm"})
    assert form.status_code == 200 and form.headers["content-type"] == "audio/pcm"


def test_an_unknown_voice_names_the_voice_the_server_has(server) -> None:
    """With --voice-file (here the tiny voice, id 'voice'), 'alba' is not a voice this
    server has: the message says which one it has."""
    with pytest.raises(openai.BadRequestError) as caught:
        openai.OpenAI(base_url=f"{server}/v1", api_key="x", max_retries=0).audio.speech.create(
            model="tts-1", voice="alba", input="Hi."
        )
    message = caught.value.body["message"]  # type: ignore[index]
    assert "'alba'" in message and "voice (the default)" in message, message


def test_cloned_voices_are_listed_and_a_cache_hit_keeps_its_seconds(server) -> None:
    data = CLONE_WAV.read_bytes()
    first = httpx.post(f"{server}/v1/voices", files={"file": ("me.wav", data)}, timeout=120)
    assert first.status_code == 200, first.text
    voice_id = first.json()["id"]
    listed = httpx.get(f"{server}/v1/voices", timeout=60).json()["data"]
    assert {"id": voice_id, "object": "voice", "source": "cloned"} in listed
    again = httpx.post(f"{server}/v1/voices", files={"file": ("me.wav", data)}, timeout=120)
    assert again.json()["cached"] is True
    assert again.json()["seconds"] == first.json()["seconds"] > 1
    assert httpx.delete(f"{server}/v1/voices/{voice_id}").status_code == 200
    listed = httpx.get(f"{server}/v1/voices", timeout=60).json()["data"]
    assert voice_id not in json.dumps(listed)


def test_the_page_lists_voices_again_after_cloning() -> None:
    """The page fills its list from GET /v1/voices; after a clone it asks again, so the
    cloned voice can be picked (the page's script, read as served)."""
    with serving(settings=ServeSettings(limits=Limits())) as (url, _):
        page = httpx.get(f"{url}/", timeout=60).text
    assert 'fetch("v1/voices"' in page and "if (file) await loadVoices();" in page
