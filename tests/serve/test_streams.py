"""`pockettts serve` with --max-streams: concurrent requests are streams of one batch,
a queue beyond them, 503 beyond the queue; /metrics shows the engine's batch sizes."""

from __future__ import annotations

import re
import threading
import time

import httpx

from pocketcli.serve.limits import Limits, ServeSettings
from tests.serve.test_http import gated_loader
from tests.support.servehelp import LONG_TEXT, serving


def _speech(url: str, text: str, seed: int) -> httpx.Response:
    body = {"model": "tts-1", "voice": "alloy", "response_format": "pcm", "input": text}
    return httpx.post(f"{url}/v1/audio/speech", json={**body, "seed": seed}, timeout=120)


def _rows_ticks(metrics: str) -> dict[int, float]:
    found = re.findall(r'pockettts_engine_ticks_total\{rows="(\d+)"\} ([0-9.e+]+)', metrics)
    return {int(rows): float(count) for rows, count in found}


def _frames(metrics: str) -> float:
    return float(re.findall(r"^pockettts_engine_frames_total ([0-9.e+]+)$", metrics, re.M)[0])


# The engine makes at most this many frames of a stream its reader has not read (about
# 2.5 s of audio: README, "many streams"); a held reader stops its stream there.
AHEAD = 32


def test_concurrent_requests_are_rows_of_one_batch() -> None:
    """Two requests held at their second frame, then let go together, share ticks.

    Each is several times the engine's read-ahead long, so neither can be made whole while
    its reader is held (a shorter one was, now and then, before the other joined: "rows 2
    never seen"): both wait at the bound, and both have most of their frames to make once
    the gate opens."""
    settings = ServeSettings(limits=Limits(max_streams=2, max_queue=0))
    text = LONG_TEXT[:1600]
    gate = threading.Event()  # while closed, each request is held before its second frame
    gate.set()
    with serving(gated_loader(gate), settings) as (url, _):
        alone = {seed: _speech(url, text, seed).content for seed in (1, 2)}
        made_alone = _frames(httpx.get(f"{url}/metrics").text)
        assert made_alone >= 2 * 3 * AHEAD  # each stream three read-aheads long at least
        gate.clear()
        got: dict[int, bytes] = {}
        started = threading.Barrier(2)

        def client(seed: int) -> None:
            started.wait(timeout=60)
            got[seed] = _speech(url, text, seed).content

        threads = [threading.Thread(target=client, args=(seed,)) for seed in (1, 2)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 60
        while "pockettts_active_jobs 2.0" not in httpx.get(f"{url}/metrics").text:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        refused = _speech(url, "One too many.", 3)  # two streaming, no queue: 503
        gate.set()
        for t in threads:
            t.join()
        metrics = httpx.get(f"{url}/metrics").text
    assert refused.status_code == 503 and int(refused.headers["retry-after"]) >= 1
    assert got == alone and alone[1] != alone[2]  # each its audio alone, byte for byte
    assert _rows_ticks(metrics).get(2, 0) > 0
