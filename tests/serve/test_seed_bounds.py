"""One seed bound everywhere (issue 32 item 5): the OpenAPI document, the HTTP answers, the
library and the CLI all take 0 to 2^64-1 (the batch's 64-bit line seeds) and refuse the
near misses (2^64, -1) with a 400 / usage error, never a 500 or a silent wrap."""

from __future__ import annotations

import httpx
import pytest

from pocketcli.errors import UserError
from pocketcli.options import MAX_SEED, SpeakOptions
from tests.support.cli import run
from tests.support.servehelp import PACK, serving

NEAR_MISSES = [(MAX_SEED, True), (MAX_SEED + 1, False), (-1, False), (0, True)]


@pytest.fixture(scope="module")
def server():
    with serving() as (url, _records):
        yield url


def test_the_openapi_document_says_the_bound_the_server_keeps(server) -> None:
    """The numbers are compared as JSON gives them (FastAPI writes bounds as doubles)."""
    document = httpx.get(f"{server}/openapi.json", timeout=60).json()
    found = []
    for name, schema in document["components"]["schemas"].items():
        seed = schema.get("properties", {}).get("seed")
        if seed is not None:
            found.append(name)
            low, high = seed.get("minimum"), seed.get("exclusiveMaximum")
            assert "maximum" not in seed, (name, seed)  # as a double, 2^64-1 would be 2^64
            assert low == 0 and MAX_SEED < high <= MAX_SEED + 1, (name, seed)
    assert len(found) >= 2, found  # the speech request and the /tts form


@pytest.mark.parametrize("seed, accepted", NEAR_MISSES)
def test_http_keeps_the_bound(server, seed, accepted) -> None:
    body = {"model": "tts-1", "voice": "alloy", "input": "Hi.", "response_format": "pcm"}
    r = httpx.post(f"{server}/v1/audio/speech", json=body | {"seed": seed}, timeout=60)
    assert r.status_code == (200 if accepted else 400), r.text
    form = httpx.post(f"{server}/tts", data={"text": "Hi.", "seed": str(seed)}, timeout=60)
    assert form.status_code == (200 if accepted else 400), form.text


@pytest.mark.parametrize("seed, accepted", NEAR_MISSES)
def test_the_library_keeps_the_bound(seed, accepted) -> None:
    if accepted:
        assert SpeakOptions(seed=seed).seed == seed
    else:
        with pytest.raises(UserError, match=r"seed.*0 to 2\^64-1"):
            SpeakOptions(seed=seed)


@pytest.mark.parametrize("seed, accepted", NEAR_MISSES)
def test_the_cli_keeps_the_bound(tmp_path, seed, accepted) -> None:
    out = tmp_path / "x.wav"
    r = run("tts", "Hi.", "--model-dir", PACK, "--seed", str(seed), "-o", out, "-q")
    assert r.returncode == (0 if accepted else 2), r.stderr
    assert out.exists() == accepted
