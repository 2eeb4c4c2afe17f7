"""The live session (FluidAudio's makeSession) on the committed tiny pack, real ONNX Runtime."""

from __future__ import annotations

import asyncio
import threading
import time

import numpy as np
import pytest

from pocketcli import PocketTTS
from pocketcli.normalize import MarkupError
from pocketcli.options import SpeakOptions
from pocketcli.session import SessionClosed, SessionFrame, UtteranceEnd

TEXT = "Hello there. This is the second sentence of a longer text, spoken in two chunks."
TEXTS = ["First line.", "Second line, [pause:200ms] with a pause.", "Third."]


@pytest.fixture(scope="module")
def tts(pack_dir) -> PocketTTS:
    return PocketTTS.open(runtime="onnx", model_dir=pack_dir)


@pytest.fixture(scope="module")
def voice(tts, voice_path):
    return tts.voices.load(voice_path)


def _spoken(session, texts) -> list[SessionFrame]:
    with session:
        for text in texts:
            session.enqueue(text)
        session.finish()
        return list(session)


def _same(a, b) -> bool:
    return len(a) == len(b) and all(
        np.array_equal(x.audio, y.audio)
        and (x.chunk_index, x.frame_index) == (y.chunk_index, y.frame_index)
        for x, y in zip(a, b, strict=True)
    )


def test_one_text_gives_the_frames_of_stream(tts, voice) -> None:
    options = SpeakOptions(seed=11, max_tokens=12)
    oneshot = list(tts.stream(TEXT, voice, options))
    frames = _spoken(tts.session(voice, options), [TEXT])
    assert _same(frames, oneshot)
    script = tts.script(TEXT, max_tokens=options.max_tokens)
    chunks = sum(1 for item in script if hasattr(item, "token_ids"))
    assert chunks >= 2
    assert {f.chunk_count for f in frames} == {chunks}
    assert {f.utterance_index for f in frames} == {0}
    assert sorted({f.chunk_index for f in frames}) == list(range(chunks))


def test_a_session_takes_a_voice_file_by_name(tts, voice, voice_path) -> None:
    options = SpeakOptions(seed=8)
    by_state = _spoken(tts.session(voice, options), TEXTS[:1])
    assert _same(_spoken(tts.session(str(voice_path), options), TEXTS[:1]), by_state)
    assert not _same(_spoken(tts.session(None, options), TEXTS[:1]), by_state)


def test_several_texts_are_reproducible_and_carry_the_noise(tts, voice) -> None:
    options = SpeakOptions(seed=5)
    a = _spoken(tts.session(voice, options), TEXTS)
    b = _spoken(tts.session(voice, options), TEXTS)
    assert _same(a, b)
    assert [f.utterance_index for f in a] == sorted(f.utterance_index for f in a)
    assert {f.utterance_index for f in a} == {0, 1, 2}
    assert any(f.is_pause for f in a if f.utterance_index == 1)
    first = [f for f in a if f.utterance_index == 0]
    assert _same(first, list(tts.stream(TEXTS[0], voice, options)))
    # One noise generator runs on: the second text is not spoken with a fresh seed.
    second = [f for f in a if f.utterance_index == 1]
    assert not _same(second, list(tts.stream(TEXTS[1], voice, options)))
    other = _spoken(tts.session(voice, SpeakOptions(seed=6)), TEXTS)
    assert not _same(a, other)


def test_enqueue_from_another_thread_while_frames_are_read(tts, voice) -> None:
    options = SpeakOptions(seed=3)
    expected = _spoken(tts.session(voice, options), TEXTS)
    session = tts.session(voice, options)
    got: list[SessionFrame] = []

    def producer() -> None:
        for text in TEXTS:
            session.enqueue(text)
            time.sleep(0.05)
        session.finish()

    writer = threading.Thread(target=producer)
    writer.start()
    for frame in session:
        got.append(frame)
    writer.join()
    assert _same(got, expected)
    assert [f.utterance_index for f in got] == [f.utterance_index for f in expected]


def test_until_idle_and_events_mark_the_end_of_each_text(tts, voice) -> None:
    options = SpeakOptions(seed=2)
    expected = _spoken(tts.session(voice, options), TEXTS[:2])
    with tts.session(voice, options) as session:
        assert session.enqueue(TEXTS[0]) == 0
        first = list(session.until_idle())
        assert session.enqueue("   ") is None  # blank: skipped, no index used
        assert session.enqueue(TEXTS[1]) == 1
        session.finish()
        events = list(session.events())
    assert _same(first + [e for e in events if isinstance(e, SessionFrame)], expected)
    assert events[-1] == UtteranceEnd(1)
    with pytest.raises(SessionClosed):
        session.enqueue("too late")


def test_bad_markup_is_the_callers_error_and_the_session_goes_on(tts, voice) -> None:
    with tts.session(voice, SpeakOptions(seed=1)) as session:
        with pytest.raises(MarkupError):
            session.enqueue("Wait [pause:forever] here.")
        assert session.enqueue("Fine.") == 0
        session.finish()
        assert len(list(session)) > 0


class _CountingRuntime:
    """The real runtime, counting FlowLM steps; optionally failing at one of them."""

    def __init__(self, runtime, fail_at: int | None = None) -> None:
        self._runtime = runtime
        self.steps = 0
        self.fail_at = fail_at

    def __getattr__(self, name):
        return getattr(self._runtime, name)

    def step(self, *args):
        self.steps += 1
        if self.fail_at is not None and self.steps >= self.fail_at:
            raise RuntimeError("step failed on purpose")
        return self._runtime.step(*args)


def test_cancel_stops_within_a_frame_and_frees_the_model(pack_dir, voice_path) -> None:
    tts = PocketTTS.open(runtime="onnx", model_dir=pack_dir)
    voice = tts.voices.load(voice_path)
    counting = _CountingRuntime(tts.runtime)
    tts.runtime = counting
    # A long budget: generation would run for hundreds of frames if not stopped.
    session = tts.session(voice, SpeakOptions(seed=1, frames_after_eos=400))
    for _ in range(3):
        session.enqueue(TEXT)
    first = next(session)
    assert isinstance(first, SessionFrame)
    steps_at_cancel = counting.steps
    session.cancel()
    steps_after = counting.steps - steps_at_cancel
    assert steps_after <= 1, steps_after  # at most the step that was running
    assert counting.steps < 3 * 130  # it was stopped, not finished (130 frames a text)
    assert tts._scheduler.active_streams == 0  # its stream left the ticks
    assert tts._generation_lock.acquire(blocking=False)
    tts._generation_lock.release()
    assert list(session) == []
    with pytest.raises(SessionClosed):
        session.enqueue("more")


def test_an_error_ends_the_stream_after_its_frames(pack_dir, voice_path) -> None:
    tts = PocketTTS.open(runtime="onnx", model_dir=pack_dir)
    voice = tts.voices.load(voice_path)
    tts.runtime = _CountingRuntime(tts.runtime, fail_at=5)
    session = tts.session(voice, SpeakOptions(seed=1))
    session.enqueue(TEXT)
    session.enqueue("Another text.")
    got = []
    with pytest.raises(RuntimeError, match="on purpose"):
        for frame in session:
            got.append(frame)
    assert 1 <= len(got) <= 5
    assert tts._generation_lock.acquire(blocking=False)
    tts._generation_lock.release()
    with pytest.raises(SessionClosed):
        session.enqueue("more")


def test_async_for_gives_the_same_frames(tts, voice) -> None:
    options = SpeakOptions(seed=9)
    expected = _spoken(tts.session(voice, options), TEXTS[:2])

    async def main() -> list[SessionFrame]:
        async with tts.session(voice, options) as session:
            for text in TEXTS[:2]:
                session.enqueue(text)
            session.finish()
            return [frame async for frame in session]

    assert _same(asyncio.run(main()), expected)


def test_cancelling_the_async_reader_cancels_generation(pack_dir, voice_path) -> None:
    tts = PocketTTS.open(runtime="onnx", model_dir=pack_dir)
    voice = tts.voices.load(voice_path)
    session = tts.session(voice, SpeakOptions(seed=1, frames_after_eos=400))
    for _ in range(5):  # several seconds of audio: still generating when cancelled
        session.enqueue(TEXT)
    frames = []

    async def reader(started: asyncio.Event) -> None:
        async with session:  # leaving the block, cancelled or not, cancels the session
            async for frame in session:
                frames.append(frame)
                started.set()
                await asyncio.sleep(0)  # the cancel may land here or in __anext__

    async def main() -> None:
        started = asyncio.Event()
        task = asyncio.create_task(reader(started))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert session.cancelled
    session._handle._left.wait(30)
    assert tts._scheduler.active_streams == 0
    assert len(frames) < 5 * 130  # it did not run to the end


def test_two_sessions_on_one_model_speak_at_once(pack_dir, voice_path) -> None:
    tts = PocketTTS.open(runtime="onnx", model_dir=pack_dir)
    voice = tts.voices.load(voice_path)
    solo = {seed: _spoken(tts.session(voice, SpeakOptions(seed=seed)), TEXTS) for seed in (1, 2)}
    before = tts._scheduler.stats.batch_sizes[2]
    results: dict[int, list[SessionFrame]] = {}
    both_open = threading.Barrier(2)

    def run(seed: int) -> None:
        session = tts.session(voice, SpeakOptions(seed=seed))
        both_open.wait(timeout=60)
        results[seed] = _spoken(session, TEXTS)

    threads = [threading.Thread(target=run, args=(seed,)) for seed in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Rows of one batch: each session's audio is its audio alone, bit for bit.
    assert _same(results[1], solo[1]) and _same(results[2], solo[2])
    assert not _same(results[1], results[2])
    assert tts._scheduler.stats.batch_sizes[2] > before  # they did share ticks
    assert tts._scheduler.stats.batched_calls > 0  # in batched calls
