"""The MCP speaker's queue on its own (``pocketcli.mcp.speaker``), with real streams of the
admission on the tiny pack and a sink the test lets open: a text stopped while its sink
opens plays none of the frames already made for it.

A real device cannot show this every time: ``PortAudioSink.write`` only fills a buffer,
which the stop's ``abort`` empties microseconds later, so frames written by mistake reach
the speakers only when PortAudio's callback happens to run in between (a test through the
MCP client caught it one run in three). The sink here records what it is given: the frames
written are the fault, whatever the device."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from pocketcli.api import PocketTTS
from pocketcli.frontends.admission import ModelJob, make_admission
from pocketcli.mcp.speaker import Speaker
from pocketcli.options import SpeakOptions
from tests.support.fakesink import RecordingSink
from tests.support.servehelp import PACK, VOICE

DEADLINE = 60.0


@pytest.fixture(scope="module")
def tts():
    return PocketTTS.open(runtime="onnx", model_dir=PACK)


class GatedSinks:
    """Sinks that wait to open until ``open`` (as a sound device slow to open does)."""

    def __init__(self) -> None:
        self.opening = threading.Event()
        self.may_open = threading.Event()
        self.made: list[RecordingSink] = []

    def __call__(self) -> RecordingSink:
        self.opening.set()
        assert self.may_open.wait(DEADLINE), "the test never let the sink open"
        sink = RecordingSink()
        self.made.append(sink)
        return sink


async def _until(ok, what: str) -> None:
    end = time.monotonic() + DEADLINE
    while not ok():
        assert time.monotonic() < end, f"not {what} within {DEADLINE:g} s"
        await asyncio.sleep(0.01)


def test_a_text_stopped_while_its_sink_opens_writes_none_of_its_frames(tts) -> None:
    voice = tts.voices.load(VOICE)
    text = "This sentence keeps the speakers busy for a while. " * 20
    sinks = GatedSinks()

    async def main() -> tuple[ModelJob, int]:
        runner = make_admission(4, None, 1)
        speaker = Speaker(sinks)
        try:
            job = ModelJob(
                lambda: (f.audio for f in tts.stream(text, voice, SpeakOptions(seed=1))),
                time.monotonic() + 300,
                front="mcp",
            )

            def start() -> ModelJob:
                runner.submit(job)
                return job

            speaker.say(start, text, "voice")
            # Playing (its sink opening) with frames made for it, waiting for the sink: the
            # second frame exists only once the first was handed to this loop.
            await _until(lambda: sinks.opening.is_set() and job.items >= 2, "frames made")
            stopped = speaker.stop()
            sinks.may_open.set()
            assert await asyncio.to_thread(speaker.wait_idle, DEADLINE), "still playing"
            return job, stopped
        finally:
            sinks.may_open.set()
            speaker.close()
            await asyncio.to_thread(runner.close, 10.0)

    job, stopped = asyncio.run(main())
    assert stopped == 1 and job.cancel_reason == "stopped"
    (sink,) = sinks.made
    assert sink.writes == [], f"{len(sink.writes)} frames of the stopped text were played"
    assert sink.aborted and not sink.closed  # dropped, not played out
