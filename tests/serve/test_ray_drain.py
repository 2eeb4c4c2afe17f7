"""`pockettts serve --ray` on a real local Ray the module starts (two CPUs): a replica
scaled down finishes the stream it has (bytes of the one-process server) and is sent no
new requests meanwhile; a replica that cannot load the model is one line naming why."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import time

import httpx
import pytest

ray = pytest.importorskip("ray")
pytest.importorskip("ray.serve")
websockets = pytest.importorskip("websockets")

from pocketcli.serve.limits import Limits, ServeSettings  # noqa: E402
from tests.support.cli import run  # noqa: E402
from tests.support.protohelp import run_async  # noqa: E402
from tests.support.rayhelp import RayServer, free_port, local_cluster  # noqa: E402
from tests.support.servehelp import LONG_TEXT, PACK, VOICE, serving  # noqa: E402
from tests.support.tensorfiles import REAL_VOICES  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

SCALE_SECONDS = 240.0  # for Ray Serve to add, or remove, a replica on a loaded machine
SHUTDOWN = 1.0  # --shutdown-timeout: a drain bounded by it would cut the stream
# A sentence is spoken once the next one begins: the first is heard before the rest is sent
FIRST = "The first part of the turn. The"
REST = " rest comes later. " + LONG_TEXT


# Ray Serve's proxies keep the address the first command gave them: every command here
# asks for the same one.
PORT = free_port()


@pytest.fixture(scope="module")
def cluster():
    with local_cluster(2) as address:
        yield address


def replica_states() -> dict[str, int]:
    """Replicas of the application by state (RUNNING, STOPPING...)."""
    from ray import serve

    status = serve.status().applications.get("pockettts")
    counts: dict[str, int] = {}
    for deployment in status.deployments.values() if status else ():
        for state, count in deployment.replica_states.items():
            name = str(state).rpartition(".")[2]
            counts[name] = counts.get(name, 0) + count
    return counts


async def wait_for(check, what: str, seconds: float = SCALE_SECONDS) -> None:
    deadline = time.monotonic() + seconds
    while not await asyncio.to_thread(check):
        assert time.monotonic() < deadline, f"{what} not within {seconds:g} s: {replica_states()}"
        await asyncio.sleep(0.25)


class Turn:
    """A websocket turn of /tts/ws whose text comes in two parts; its PCM kept."""

    def __init__(self, sock) -> None:
        self.sock = sock
        self.pcm = bytearray()
        self.heard = asyncio.Event()
        self.final = asyncio.Event()
        self.errors: list[dict] = []
        self.reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        try:
            async for message in self.sock:  # ends when the socket closes
                self._take(message)
        except websockets.ConnectionClosed as exc:
            self.errors.append({"closed": str(exc)})

    def _take(self, message: str | bytes) -> None:
        if isinstance(message, bytes):
            self.pcm.extend(message)
            self.heard.set()
            return
        frame = json.loads(message)
        if frame["type"] == "error":
            self.errors.append(frame["data"])
        elif frame["type"] == "event" and frame["data"]["event_type"] == "final":
            self.final.set()

    async def start(self, seed: int) -> None:
        await self.sock.send(json.dumps({"type": "config", "data": {"seed": seed}}))
        await self.sock.send(json.dumps({"type": "text", "data": {"text": FIRST}}))
        await self._until(self.heard, "the first audio")

    async def finish(self) -> bytes:
        await self.sock.send(json.dumps({"type": "text", "data": {"text": REST}}))
        await self.sock.send(json.dumps({"type": "flush", "data": {}}))
        await self._until(self.final, "the end of the turn")
        assert not self.errors, self.errors
        return bytes(self.pcm)

    async def _until(self, event: asyncio.Event, what: str) -> None:
        waiting = asyncio.create_task(event.wait())
        await asyncio.wait({waiting, self.reader}, timeout=120, return_when="FIRST_COMPLETED")
        waiting.cancel()
        assert event.is_set(), f"{what} never came (errors: {self.errors}; socket closed: " + (
            f"{self.reader.done()})"
        )


def connect(url: str, timeout: float = 120.0):
    return websockets.connect(url.replace("http://", "ws://") + "/tts/ws", open_timeout=timeout)


def one_process_turn(seed: int) -> bytes:
    settings = ServeSettings(limits=Limits(max_streams=1, max_queue=0))

    async def turn(url: str) -> bytes:
        async with connect(url) as sock:
            spoken = Turn(sock)
            await spoken.start(seed)
            return await spoken.finish()

    with serving(settings=settings) as (url, _):
        return run_async(turn(url))


def test_a_replica_that_cannot_load_the_model_is_one_line_naming_why(cluster) -> None:
    # The command's own check of the voice file (its headers: no model) passes; a replica
    # loading it finds a voice made for a wider model than the pack's.
    wide = REAL_VOICES / "fantine.safetensors"
    r = run(
        "serve", "--ray", cluster, "--port", str(PORT), "--model-dir", str(PACK),
        "--voice-file", str(wide), timeout=400,
    )  # fmt: skip
    lines = r.stderr.decode().strip().splitlines()
    assert r.returncode == 1, r.stderr
    assert len(lines) == 1 and lines[0].startswith("pockettts: error: a replica on "), lines
    assert f"cannot load the model: {wide}: voice in it is 1024 wide" in lines[0], lines
    from ray import serve

    assert "pockettts" not in serve.status().applications  # the half-made one removed


def test_relative_paths_reach_the_replicas(cluster, tmp_path) -> None:
    """--model-dir, --voice-file and --voice-dir relative to the command's folder: the
    replicas run in another folder (Ray's workers: here the test's), and load them."""
    shutil.copytree(PACK, tmp_path / "pack")
    shutil.copy(VOICE, tmp_path / "v.safetensors")
    (tmp_path / "voices").mkdir()
    shutil.copy(VOICE, tmp_path / "voices" / "bob.safetensors")
    args = ("--model-dir", "pack", "--voice-file", "v.safetensors", "--voice-dir", "voices")
    with RayServer(cluster, *args, port=PORT, cwd=tmp_path) as server:
        for voice in ("bob", "alloy"):  # a file of --voice-dir; the default (--voice-file)
            body = {"model": "tts-1", "voice": voice, "input": "Found.", "response_format": "wav"}
            got = httpx.post(f"{server.url}/v1/audio/speech", json=body, timeout=120)
            assert got.status_code == 200 and len(got.content) > 1000, got.text


def test_a_replica_scaled_down_finishes_its_stream_and_takes_no_new_requests(cluster) -> None:
    args = ("--model-dir", str(PACK), "--voice-file", str(VOICE), "--shutdown-timeout", "1")
    # one stream per replica, nothing queued in it: a second socket waits in Ray's proxy
    limits = ("--max-streams", "1", "--max-queue", "0")
    scaling = ("--min-replicas", "1", "--max-replicas", "2")
    delays = ("--upscale-delay", "1", "--downscale-delay", "2")

    async def steps(url: str) -> tuple[bytes, str, str]:
        first = await connect(url)  # held open: an ongoing request of replica 1
        try:
            # the second waits for the replica Ray adds for it (the newest: the one Ray
            # removes first when it scales down)
            async with connect(url, SCALE_SECONDS) as sock:
                kept, ours = (s.response.headers["x-pockettts-replica"] for s in (first, sock))
                assert kept != ours
                turn = Turn(sock)
                await turn.start(seed=6)  # a stream in flight on the second replica
                await first.close()  # one ongoing request left: one replica is enough
                await wait_for(lambda: replica_states().get("STOPPING") == 1, "a replica stopping")
                stopping = time.monotonic()
                answer = await asyncio.to_thread(
                    httpx.post,
                    f"{url}/v1/audio/speech",
                    json={"model": "tts-1", "voice": "alloy", "input": "Elsewhere."},
                    timeout=120,
                )
                assert answer.status_code == 200, answer.text
                # past what a drain bounded by --shutdown-timeout would have given it
                await asyncio.sleep(max(0.0, stopping + SHUTDOWN + 2.0 - time.monotonic()))
                assert replica_states().get("STOPPING") == 1, replica_states()
                spoken = await turn.finish()
            return spoken, kept, answer.headers["x-pockettts-replica"]
        finally:
            await first.close()

    server = RayServer(cluster, *args, *limits, *scaling, *delays, port=PORT)
    with server:
        spoken, kept, answered_by = run_async(steps(server.url), deadline=3 * SCALE_SECONDS)
        assert answered_by == kept  # the new request went to the replica that stays
        assert len(spoken) > 48_000 and spoken == one_process_turn(seed=6)
        deadline = time.monotonic() + SCALE_SECONDS
        while replica_states() != {"RUNNING": 1}:  # and the drained replica is gone
            assert time.monotonic() < deadline, replica_states()
            time.sleep(0.25)


def test_a_config_files_builder_deploys_the_application_with_its_args(cluster) -> None:
    """What a Ray Serve config (KubeRay's RayService: docs/kuberay-rayservice.yaml) runs."""
    from ray import serve

    from pocketcli.serve import rayserve

    args = {"model_dir": str(PACK), "voice_file": str(VOICE), "max_streams": 2}
    serve.start(http_options={"host": "127.0.0.1", "port": PORT})
    serve.run(rayserve.build({**args, "min_replicas": 2}), name="pockettts", route_prefix="/")
    try:
        assert replica_states() == {"RUNNING": 2}  # each loaded the model
        shelf = ray.get_actor(rayserve.SHARED_SHELF, namespace=rayserve.NAMESPACE)
        assert ray.get(shelf.ids.remote(), timeout=60) == []
    finally:
        serve.delete("pockettts")
        ray.kill(ray.get_actor(rayserve.SHARED_SHELF, namespace=rayserve.NAMESPACE))
    with pytest.raises(ValueError, match="unknown args max_stream "):
        rayserve.build({"max_stream": 2})


def test_a_command_asking_for_another_address_than_serves_proxies_is_one_line(cluster) -> None:
    from ray import serve

    serve.start(http_options={"host": "127.0.0.1", "port": PORT})  # Serve runs there now
    other = free_port()
    try:  # refused before anything is deployed; past it, the command would serve on
        r = run(
            "serve", "--ray", cluster, "--port", str(other), "--model-dir", str(PACK), timeout=120
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail(f"serve --ray --port {other} went on where Serve listens on {PORT}")
    lines = r.stderr.decode().strip().splitlines()
    assert r.returncode == 1, r.stderr
    assert len(lines) == 1 and f"proxies on 127.0.0.1:{PORT}" in lines[0], lines
    assert f"--port {PORT}" in lines[0], lines
