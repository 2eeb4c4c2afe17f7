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

import numpy as np
import pytest

from pocketcli.api import PocketTTS
from pocketcli.frontends.admission import ModelJob, make_admission
from pocketcli.mcp.speaker import Speaker
from pocketcli.options import SpeakOptions
from tests.support.fakesink import RecordingSink
from tests.support.servehelp import PACK, VOICE

DEADLINE = 60.0
FLUSH_SECONDS = 10.0  # a draining sink's most (the next text is asked for within ms)


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


class _Streams:
    """The speaker's ``start`` for each text: a real stream of ``runner`` on the tiny pack,
    recording what the admission held of the text before it when it was submitted."""

    def __init__(self, tts, runner) -> None:
        self.tts, self.runner = tts, runner
        self.voice = tts.voices.load(VOICE)
        self.jobs: list[ModelJob] = []
        self.before_made: list[bool] = []  # the text before it had made its last frame
        self.submitted = threading.Condition()
        self.first_hooks: list = []  # run (in order) before the speaker's, when a job is over

    def start(self, text: str):
        def submit() -> ModelJob:
            job = ModelJob(
                lambda: (f.audio for f in self.tts.stream(text, self.voice, SpeakOptions(seed=1))),
                time.monotonic() + 300,
                front="mcp",
            )
            if self.jobs:
                self.before_made.append(self.jobs[-1].finished is not None)
            for hook in self.first_hooks:
                job.on_done(hook)
            with self.submitted:
                self.jobs.append(job)  # before it can be over (a short text's can at once)
                self.submitted.notify_all()
            try:
                self.runner.submit(job)
            except Exception:
                with self.submitted:
                    self.jobs.remove(job)
                raise
            return job

        return submit


def _blocker(release: threading.Event) -> ModelJob:
    """A stream of another front end that holds its slot until ``release``."""

    def work():
        assert release.wait(DEADLINE), "the test never released its stream"
        yield from ()

    return ModelJob(work, time.monotonic() + 300, front="http")


def test_texts_play_in_order_each_submitted_once_the_one_before_has_made_its_last_frame(
    tts,
) -> None:
    texts = [f"Text number {n}, said in its turn." for n in ("one", "two", "three")]
    voice = tts.voices.load(VOICE)
    expected = [
        np.concatenate([f.audio for f in tts.stream(t, voice, SpeakOptions(seed=1))]) for t in texts
    ]
    made: list[RecordingSink] = []
    next_before_end: list[bool] = []  # each text's next one asked for before it ended

    class DrainingSink(RecordingSink):
        """A device's flush: what it holds plays out, time enough for the next text to be
        asked for (no gap); waited for here, up to FLUSH_SECONDS, not a buffer's time."""

        def __init__(self, index: int) -> None:
            super().__init__()
            self.index = index

        def flush(self) -> None:
            super().flush()
            if self.index + 1 < len(texts):
                with streams.submitted:
                    ok = streams.submitted.wait_for(
                        lambda: len(streams.jobs) > self.index + 1, FLUSH_SECONDS
                    )
                next_before_end.append(ok)

    def sink() -> RecordingSink:
        made.append(DrainingSink(len(made)))
        return made[-1]

    runner = make_admission(4, None, 4)
    streams = _Streams(tts, runner)

    async def main() -> None:
        speaker = Speaker(sink)
        try:
            aheads = [speaker.say(streams.start(t), t, "voice") for t in texts]
            assert aheads == [0, 1, 2]
            assert len(streams.jobs) == 1  # only the text to play now is a stream yet
            assert await asyncio.to_thread(speaker.wait_idle, DEADLINE), "still playing"
            assert speaker.spoken == 3 and speaker.errors == []
        finally:
            speaker.close()
            await asyncio.to_thread(runner.close, 10.0)

    asyncio.run(main())
    # Made one ahead: submitted once the text before it was made, before it had ended (its
    # stream's end reaches the speaker after the next one is asked for: no gap between).
    assert streams.before_made == [True, True]
    assert next_before_end == [True, True]
    assert len(made) == 3
    for sink_, audio in zip(made, expected, strict=True):
        assert np.array_equal(np.concatenate(sink_.writes), audio)  # in order, whole


def test_a_text_whose_turn_finds_the_server_busy_waits_for_a_slot_or_is_said_not_spoken(
    tts,
) -> None:
    # One stream at a time, no queue. When the first text's stream is over, another front
    # end's stream takes the slot (its hook runs before the speaker's): the second text's
    # turn finds the server busy. It waits for the slot and plays once it is free; with
    # less patience than the other stream holds it, it is said in the errors, not played,
    # and the speakers go on.
    async def main(patience: float) -> tuple[Speaker, list[str]]:
        runner = make_admission(0, None, 1)
        speaker = Speaker(RecordingSink, busy_seconds=patience)
        streams = _Streams(tts, runner)
        release = threading.Event()
        other = _blocker(release)
        streams.first_hooks.append(lambda job: job is streams.jobs[0] and runner.submit(other))
        seen: list[str] = []
        try:
            speaker.say(streams.start("First."), "First.", "voice")
            speaker.say(streams.start("Second."), "Second.", "voice")
            waits = await _status_until(speaker, lambda s: s["spoken"] == 1 and s["waiting"])
            seen.append(f"waiting {waits['waiting']} speaking {waits['speaking']}")
            if patience > 1:
                release.set()
            else:
                await _status_until(speaker, lambda s: s["last_error"] is not None)
                release.set()
                assert await asyncio.to_thread(speaker.wait_idle, DEADLINE)
                await _until(lambda: runner.active == 0, "the other stream over")
                speaker.say(streams.start("Third."), "Third.", "voice")
            assert await asyncio.to_thread(speaker.wait_idle, DEADLINE), "still playing"
            return speaker, seen
        finally:
            release.set()
            speaker.close()
            await asyncio.to_thread(runner.close, 10.0)

    waited, seen = asyncio.run(main(DEADLINE))
    assert seen == ["waiting 1 speaking False"]
    assert waited.spoken == 2 and waited.errors == []
    gave_up, seen = asyncio.run(main(0.3))
    assert seen == ["waiting 1 speaking False"]
    assert gave_up.spoken == 2  # the first and the third
    assert gave_up.errors == ["'Second.' was not spoken: the server stayed busy for 0.3 s"]


async def _status_until(speaker: Speaker, ok) -> dict:
    end = time.monotonic() + DEADLINE
    while not ok(status := speaker.status()):
        assert time.monotonic() < end, status
        await asyncio.sleep(0.01)
    return status
