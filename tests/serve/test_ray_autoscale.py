"""Ray Serve's autoscaling of `pockettts serve --ray` on a real local Ray the module starts
(two CPUs): one replica under no load, a second under a burst of clients past one
replica's streams, and back to one once the burst is over (on delays set short here)."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

pytest.importorskip("ray")
pytest.importorskip("ray.serve")

from tests.support.rayhelp import RayServer, local_cluster, running_replicas  # noqa: E402
from tests.support.servehelp import LONG_TEXT, PACK, VOICE  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

CLIENTS = 4  # past one replica's single stream: the target is one ongoing request each
SCALE_SECONDS = 180.0  # for Ray Serve to add, or remove, a replica on a loaded machine


def wait_for_replicas(count: int, deadline: float) -> None:
    while running_replicas() != count:
        assert time.monotonic() < deadline, f"{running_replicas()} replica(s), not {count}"
        time.sleep(0.25)


def test_a_burst_adds_a_replica_and_the_quiet_after_removes_it() -> None:
    args = ("--model-dir", str(PACK), "--voice-file", str(VOICE), "--max-streams", "1")
    scaling = ("--min-replicas", "1", "--max-replicas", "2")
    delays = ("--upscale-delay", "1", "--downscale-delay", "3", "--max-queue", "8")
    with local_cluster(2) as address, RayServer(address, *args, *scaling, *delays) as server:
        assert running_replicas() == 1
        stop = threading.Event()
        statuses: list[int | str] = []

        def client() -> None:
            body = {"model": "tts-1", "voice": "alloy", "input": LONG_TEXT}
            body["response_format"] = "pcm"
            with httpx.Client(timeout=120) as http:
                while not stop.is_set():
                    try:
                        answer = http.post(f"{server.url}/v1/audio/speech", json=body)
                    except httpx.HTTPError as exc:
                        statuses.append(type(exc).__name__)
                        continue
                    statuses.append(answer.status_code)

        threads = [threading.Thread(target=client, daemon=True) for _ in range(CLIENTS)]
        for t in threads:
            t.start()
        try:
            wait_for_replicas(2, time.monotonic() + SCALE_SECONDS)
        finally:
            stop.set()
            for t in threads:
                t.join(120)
        assert statuses and set(statuses) == {200}, statuses  # Ray held what did not fit
        wait_for_replicas(1, time.monotonic() + SCALE_SECONDS)
        got = httpx.post(
            f"{server.url}/v1/audio/speech",
            json={"model": "tts-1", "voice": "alloy", "input": "Still here."},
            timeout=60,
        )
        assert got.status_code == 200
