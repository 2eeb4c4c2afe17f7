"""Clients that try to make the server spend without bound (issue 31's hostile list, the
HTTP and websocket cases): every stream goes through the one admission, a deadline ends
the generation with the response, a socket's cancel or close stops every stream it
started, and nothing waits on a client that does not read.

Real uvicorn on 127.0.0.1 (the tiny pack), httpx and the ``websockets`` library as
clients. Generation is counted in frames the engine made (its own stats), never
guessed from a sleep; every wait is for the server's answer, a log record or the
engine falling idle, with a deadline.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import httpx
import pytest

websockets = pytest.importorskip("websockets")

from pocketcli.frontends.admission import AHEAD  # noqa: E402
from pocketcli.frontends.backend import Backend  # noqa: E402
from pocketcli.serve.limits import Limits, ServeSettings  # noqa: E402
from tests.support.protohelp import run_async  # noqa: E402
from tests.support.servehelp import LogRecords, serving, tiny_loader  # noqa: E402

DEADLINE = 60.0
FRAME_BYTES = 1920 * 2  # one 80 ms frame of 16-bit PCM at 24 kHz
# Text that is mostly silence (issue 31: pause frames once skipped the reader's bound).
PAUSES = "Hi. " + "[pause:10s] " * 330 + "Bye."
LONG = " ".join(f"Sentence number {i} goes on for a while." for i in range(60))
# More audio than the sockets' buffers take (they hold a few MB: about 1,000 frames).
HUGE = " ".join([LONG] * 40)


@contextmanager
def hostile_server(**limits) -> Iterator[tuple[str, LogRecords, Backend]]:
    made: dict[str, Backend] = {}
    load = tiny_loader()

    def loading() -> Backend:
        made["backend"] = load()
        return made["backend"]

    with serving(loading, ServeSettings(limits=Limits(**limits))) as (url, records):
        backend = made["backend"]
        # Warm: the engine's threads and the voice exist before a baseline is taken.
        httpx.post(
            f"{url}/v1/audio/speech",
            json={"model": "tts-1", "input": "Warm up.", "response_format": "pcm"},
            timeout=DEADLINE,
        ).raise_for_status()
        yield url, records, backend


def wait_for(condition: Callable[[], bool], what: str, timeout: float = DEADLINE) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout:g} s: {what}"
        time.sleep(0.02)


def engine_idle(backend: Backend) -> bool:
    return backend.engine_streams() == 0


def frames(backend: Backend) -> int:
    return backend.engine_stats().frames


def records_of(records: LogRecords, event: str) -> list[dict]:
    return [r for r in list(records.records) if r["event"] == event]


def test_a_deadline_ends_the_generation_and_the_response_of_a_reader_that_never_reads() -> None:
    """--request-timeout 2, a text of pauses, a client that reads one chunk and stops:
    the response ends at the deadline (not 20 s later), the engine stops within a
    tick of it, and what was made is what the client could be sent plus the bounds."""
    with hostile_server(request_seconds=2.0, max_streams=2) as (url, records, backend):
        before = frames(backend)
        body = {"model": "tts-1", "input": PAUSES, "response_format": "pcm"}
        with (
            httpx.Client(timeout=DEADLINE) as client,
            client.stream("POST", f"{url}/v1/audio/speech", json=body) as response,
        ):
            assert response.status_code == 200
            chunks = response.iter_raw()
            got = len(next(chunks))
            started = time.monotonic()
            wait_for(lambda: records_of(records, "speech")[1:], "the request's log record")
            ended = time.monotonic() - started
            wait_for(lambda: engine_idle(backend), "the engine to let the stream go")
            at_end = frames(backend)
            with pytest.raises(httpx.RemoteProtocolError):  # cut: the client sees it
                for chunk in chunks:
                    got += len(chunk)
        (record,) = records_of(records, "speech")[1:]
    assert record["outcome"] == "deadline"
    assert ended < 2.0 + 1.0
    assert frames(backend) == at_end  # nothing made once the stream was let go
    made = at_end - before
    # What the server may hold for a reader: the admission's AHEAD frames, the engine's
    # reader bound (max_ahead, pauses included) and the frame in the making.
    assert made <= got / FRAME_BYTES + AHEAD + backend.tts._scheduler.max_ahead + 2, (made, got)


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        return int(next(line for line in status if line.startswith("VmRSS:")).split()[1]) / 1024


# What a stalled stream may cost the process (its frames, buffers, its text's script, the
# engine's working memory for one more row): 14-28 MB measured on the tiny pack; the
# audio of a whole text would be hundreds of MB.
PER_STREAM_MB = 50

# The engine's half of item 4 (pause frames count against max_ahead; a session's queue is
# bounded) comes with the engine without a thread per session (``session.MAX_QUEUED_TEXTS``).
# Until that is merged these cases fail as they should; once it is, they must pass.
ENGINE_HALF = pytest.mark.xfail(
    not hasattr(__import__("pocketcli.session").session, "MAX_QUEUED_TEXTS"),
    strict=True,
    reason="the engine still makes pause frames past max_ahead and sessions queue frames "
    "without bound (issue 31 item 4, the engine's half, not merged here yet)",
)


def _never_read(text: str) -> tuple[int, float]:
    """Four HTTP clients (two plain, two SSE) that never read ``text``: the frames the
    engine made and the MB the process grew once their streams stalled. They leave;
    every stream is let go, every thread the server started for them is gone."""
    with hostile_server(max_streams=4, max_chars=len(HUGE)) as (url, records, backend):
        baseline, rss = threading.active_count(), rss_mb()
        before = frames(backend)
        clients = [httpx.Client(timeout=DEADLINE) for _ in range(4)]
        responses = []
        for i, client in enumerate(clients):
            body = {"model": "tts-1", "input": text, "response_format": "pcm"}
            if i % 2:
                body["stream_format"] = "sse"
            request = client.build_request("POST", f"{url}/v1/audio/speech", json=body)
            responses.append(client.send(request, stream=True))
        assert all(r.status_code == 200 for r in responses)
        seen: list[float] = [-1, 0, time.monotonic()]

        def stalled() -> bool:  # no frame made and no MB taken for half a second
            now = [frames(backend), round(rss_mb())]
            if now != seen[:2]:
                seen[:] = [*now, time.monotonic()]
            return backend.engine_streams() == 4 and time.monotonic() - seen[2] > 0.5

        wait_for(stalled, "the four streams to stall on their readers")
        made, grown = frames(backend) - before, rss_mb() - rss
        print(f"made {made} frames, grew {grown:.1f} MB")
        for response, client in zip(responses, clients, strict=True):
            response.close()
            client.close()
        wait_for(lambda: len(records_of(records, "speech")) == 5, "the four log records")
        wait_for(lambda: engine_idle(backend), "the engine to let the streams go")
        wait_for(lambda: threading.active_count() <= baseline, "threads back to the baseline")
        outcomes = [r["outcome"] for r in records_of(records, "speech")[1:]]
    assert outcomes == ["disconnected"] * 4
    return made, grown


def test_readers_that_never_read_speech_hold_a_bounded_amount() -> None:
    made, grown = _never_read(HUGE)  # tens of thousands of frames each, were they all made
    # Per stream: what the sockets' buffers took, the admission's AHEAD, the engine's
    # max_ahead, the frame in the making.
    assert made <= 4 * 3000, made
    assert grown < 4 * PER_STREAM_MB, grown


@ENGINE_HALF
def test_readers_that_never_read_pauses_hold_a_bounded_amount() -> None:
    _, grown = _never_read(PAUSES)  # 330 pauses of 125 frames each: 317 MB a stream
    assert grown < 4 * PER_STREAM_MB, grown


# -- the websocket --------------------------------------------------------------------------
async def _collect(ws, until: Callable[[dict], bool]) -> list[dict]:
    """Server frames (audio as {"type": "binary"}) until one matches ``until``."""
    seen = []
    while True:
        raw = await asyncio.wait_for(ws.recv(), DEADLINE)
        frame = {"type": "binary", "size": len(raw)} if isinstance(raw, bytes) else json.loads(raw)
        seen.append(frame)
        if until(frame):
            return seen


def _event(name: str) -> Callable[[dict], bool]:
    return lambda f: f.get("type") == "event" and f["data"]["event_type"] == name


def _send(kind: str, **data) -> str:
    return json.dumps({"type": kind, "data": data})


def test_a_flood_of_flushes_is_admitted_within_the_limits_or_refused() -> None:
    """One socket sending 1,500 text+flush pairs at once: the turns queue within
    --max-streams and --max-queue, then the socket hears "busy" and close code 1013;
    the threads never grow with the flushes and come back once it is gone."""
    with hostile_server(max_streams=2, max_queue=4) as (url, records, backend):
        baseline = threading.active_count()
        peak = [baseline]
        stop = threading.Event()

        def watch() -> None:
            while not stop.is_set():
                peak[0] = max(peak[0], threading.active_count())
                time.sleep(0.005)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()

        async def flood() -> tuple[list[dict], int | None]:
            ws_url = url.replace("http://", "ws://") + "/tts/ws"
            async with websockets.connect(ws_url, max_size=None) as ws:
                await ws.send(_send("config", seed=1))
                await _collect(ws, _event("config_accepted"))
                for i in range(1500):
                    await ws.send(_send("text", text=f"Line {i}."))
                    await ws.send(_send("flush"))
                seen = []
                with pytest.raises(websockets.ConnectionClosed):
                    while True:
                        seen += await _collect(ws, lambda f: f.get("type") == "error")
                return seen, ws.close_code

        seen, code = run_async(flood())
        wait_for(lambda: engine_idle(backend), "the engine to let the turns go")
        stop.set()
        watcher.join()
        wait_for(lambda: threading.active_count() <= baseline, "threads back to the baseline")
        turns = records_of(records, "ws turn")
    errors = [f["data"] for f in seen if f.get("type") == "error"]
    assert errors and errors[-1]["code"] == "busy" and errors[-1]["retry_after"] >= 1
    assert code == 1013
    assert 0 < len(turns) < 1500  # refused once the streams and the queue were taken
    # The worker threads are the admission's (in the baseline); an admitted turn adds
    # its session's thread: two at most, and the watcher's own.
    assert peak[0] <= baseline + 2 + 1, (peak[0], baseline)


def test_a_socket_closing_or_cancelling_stops_every_stream_it_started() -> None:
    """Three long turns flushed on one socket, then ``cancel``: none says final, every
    one is logged cancelled, and the engine lets them go; likewise three turns and one
    left open (its session waiting for text), and the socket gone without a word."""
    with hostile_server(max_streams=4, max_queue=4) as (url, records, backend):
        baseline = threading.active_count()
        ws_url = url.replace("http://", "ws://") + "/tts/ws"

        async def three_turns(ws) -> None:
            await ws.send(_send("config", seed=1))
            await _collect(ws, _event("config_accepted"))
            for _ in range(3):
                await ws.send(_send("text", text=LONG))
                await ws.send(_send("flush"))
            await _collect(ws, lambda f: f["type"] == "binary")

        async def cancelled() -> list[dict]:
            async with websockets.connect(ws_url) as ws:
                await three_turns(ws)
                await ws.send(_send("cancel"))
                await ws.send(_send("ping"))
                seen = await _collect(ws, lambda f: f.get("type") == "pong")
                await asyncio.to_thread(
                    wait_for, lambda: len(records_of(records, "ws turn")) == 3, "3 records"
                )
                return seen

        seen = run_async(cancelled())
        assert not [f for f in seen if _event("final")(f)]
        wait_for(lambda: engine_idle(backend), "the engine to let the turns go")
        idle = frames(backend)
        first = records_of(records, "ws turn")
        assert [r["outcome"] for r in first] == ["cancelled"] * 3
        assert all(r["frames_after_cancel"] <= 1 for r in first)

        async def closed() -> None:
            ws = await websockets.connect(ws_url)
            await three_turns(ws)
            await ws.send(_send("text", text="And a turn left open, waiting for more."))
            # The server reads frames in order: its pong says it has read all four turns'
            # text (a socket lost first drops what it had not read: no turn, no record).
            await ws.send(_send("ping"))
            await _collect(ws, lambda f: f.get("type") == "pong")
            ws.transport.abort()  # gone, without a close frame

        run_async(closed())
        wait_for(lambda: len(records_of(records, "ws turn")) == 7, "4 more records")
        wait_for(lambda: engine_idle(backend), "the engine to let the turns go")
        after_close = frames(backend)
        wait_for(lambda: threading.active_count() <= baseline, "threads back to the baseline")
        assert frames(backend) == after_close
        second = records_of(records, "ws turn")[3:]
    assert [r["outcome"] for r in second] == ["cancelled"] * 4
    assert after_close >= idle


def test_sockets_beyond_the_streams_and_the_queue_hear_busy() -> None:
    """--max-streams 2 --max-queue 2: of eight sockets speaking at once, two speak, two
    wait, the rest hear an error "busy" and close code 1013 (issue 31: 16 spoke)."""
    with hostile_server(max_streams=2, max_queue=2) as (url, records, backend):
        ws_url = url.replace("http://", "ws://") + "/tts/ws"

        answered: list[str] = []

        async def one(release: asyncio.Event) -> tuple[str, int | None]:
            async with websockets.connect(ws_url) as ws:
                await ws.send(_send("config", seed=1))
                await _collect(ws, _event("config_accepted"))
                await ws.send(_send("text", text=LONG))
                seen = await _collect(ws, lambda f: f["type"] in ("binary", "error"))
                answered.append(seen[-1]["type"])
                if seen[-1]["type"] == "error":
                    with pytest.raises(websockets.ConnectionClosed):
                        await asyncio.wait_for(ws.recv(), DEADLINE)
                    return seen[-1]["data"]["code"], ws.close_code
                await asyncio.wait_for(release.wait(), DEADLINE)  # hold the stream
                return "spoke", None

        async def eight() -> list[tuple[str, int | None]]:
            release = asyncio.Event()
            sockets = [asyncio.ensure_future(one(release)) for _ in range(8)]
            # Two speak and four are refused while two wait; then the speakers leave.
            while len(answered) < 6:
                await asyncio.sleep(0.01)
            waiting = list(answered)
            release.set()
            return [*(await asyncio.gather(*sockets)), waiting]  # type: ignore[list-item]

        results = run_async(eight())
        wait_for(lambda: engine_idle(backend), "the engine to let the turns go")
        metrics = httpx.get(f"{url}/metrics", timeout=DEADLINE).text
    *results, first_six = results
    assert sorted(first_six) == ["binary"] * 2 + ["error"] * 4, first_six
    assert sorted(results).count(("busy", 1013)) == 4, results
    assert results.count(("spoke", None)) == 4  # the two that waited spoke in the end
    assert 'pockettts_streams_refused_total{front_end="websocket"} 4.0' in metrics
    assert 'pockettts_streams_admitted_total{front_end="http"} 1.0' in metrics


@ENGINE_HALF
def test_sockets_that_never_read_hold_a_bounded_amount() -> None:
    """Four websockets that send a huge turn and never read its audio: the engine makes a
    bounded number of frames, not the text; once they go, so do their streams and threads."""
    with hostile_server(max_streams=4, max_chars=len(HUGE)) as (url, records, backend):
        baseline, rss = threading.active_count(), rss_mb()
        before = frames(backend)
        ws_url = url.replace("http://", "ws://") + "/tts/ws"
        pieces = [HUGE[i : i + 30_000] for i in range(0, len(HUGE), 30_000)]

        async def four() -> tuple[int, float]:
            sockets = []
            for _ in range(4):  # max_queue=1: the client library buffers one message
                ws = await websockets.connect(ws_url, max_queue=1)
                await ws.send(_send("config", seed=1))
                await _collect(ws, _event("config_accepted"))
                for piece in pieces:
                    await ws.send(_send("text", text=piece))
                await ws.send(_send("flush"))
                sockets.append(ws)
            seen: list[float] = [-1, 0, time.monotonic()]

            def stalled() -> bool:
                now = [frames(backend), round(rss_mb())]
                if now != seen[:2]:
                    seen[:] = [*now, time.monotonic()]
                return backend.engine_streams() == 4 and time.monotonic() - seen[2] > 0.5

            await asyncio.to_thread(wait_for, stalled, "the four turns to stall on readers", 30)
            held = frames(backend) - before, rss_mb() - rss
            for ws in sockets:
                ws.transport.abort()
            return held

        made, grown = run_async(four())
        wait_for(lambda: len(records_of(records, "ws turn")) == 4, "the four turns' records")
        wait_for(lambda: engine_idle(backend), "the engine to let the turns go")
        wait_for(lambda: threading.active_count() <= baseline, "threads back to the baseline")
        outcomes = [r["outcome"] for r in records_of(records, "ws turn")]
    assert outcomes == ["cancelled"] * 4
    assert made <= 4 * 3000, made
    assert grown < 4 * PER_STREAM_MB, grown
