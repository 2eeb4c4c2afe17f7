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


def test_concurrent_requests_are_rows_of_one_batch() -> None:
    settings = ServeSettings(limits=Limits(max_streams=2, max_queue=0))
    text = LONG_TEXT[:400]
    gate = threading.Event()  # while closed, each request is held before its second frame
    gate.set()
    with serving(gated_loader(gate), settings) as (url, _):
        alone = {seed: _speech(url, text, seed).content for seed in (1, 2)}
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
