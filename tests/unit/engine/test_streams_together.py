"""Many streams of one model at once (the scheduler), on the committed tiny pack.

Each stream's audio must be its audio alone (a scheduler of one row), bit for
bit, whatever shares its ticks, in fp32 and int8. Real ONNX Runtime sessions,
real batched graphs.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from pocketcli import PocketTTS
from pocketcli.engine import scheduler as scheduler_module
from pocketcli.engine.chunk import DECODE_BATCH, ChunkTrace, Frame
from pocketcli.engine.scheduler import MAX_MIMI_TICKS, PREFILL_TOKENS_PER_TICK, Scheduler
from pocketcli.normalize.timeline import Pause
from pocketcli.options import SpeakOptions
from pocketcli.packs.manifest import BATCH_GRAPHS, MIMI_BATCH_GRAPH, PackManifest, seal
from pocketcli.runtimes.base import batching
from tests.support.alone import frames_alone
from tests.support.tiny_now import build_tiny_pack

TEXTS = (
    "Hello there. This is the longest of the three lines, spoken in several chunks.",
    "Short one.",
    "A middle line, [pause:200ms] with a pause in it.",
)
SEEDS = (1, 2, 3)


@pytest.fixture(scope="module")
def fp32(pack_dir) -> PocketTTS:
    return PocketTTS.open(runtime="onnx", model_dir=pack_dir)


@pytest.fixture(scope="module")
def int8(pack_dir) -> PocketTTS:
    return PocketTTS.open(runtime="onnx", model_dir=pack_dir, precision="int8")


@pytest.fixture(scope="module")
def built_now(tmp_path_factory) -> Path:
    """The tiny model's pack as the builder makes it now: its batched step fused, its
    per-row int8 on MatMulIntegerToFloat (issue 34); the committed one is older."""
    return build_tiny_pack(tmp_path_factory.mktemp("now") / "pack")


def _voices(tts: PocketTTS, fixture_dir: Path) -> list:
    return [
        tts.voices.load(fixture_dir / "voice.safetensors"),
        None,
        tts.voices.load(fixture_dir / "clone_voice.safetensors"),
    ]


def _jobs(tts: PocketTTS, fixture_dir: Path):
    """(chunks, voice, noise, settings) of each line, fresh each call."""
    jobs = []
    for text, voice, seed in zip(TEXTS, _voices(tts, fixture_dir), SEEDS, strict=True):
        opts = SpeakOptions(seed=seed, max_tokens=12)
        jobs.append(
            (tts._script_for(text, opts), voice, tts._noise_for(opts), tts._settings_for(opts))
        )
    return jobs


def _alone(tts: PocketTTS, fixture_dir: Path) -> list[list[Frame]]:
    return [frames_alone(tts.runtime, *job) for job in _jobs(tts, fixture_dir)]


def _together(scheduler: Scheduler, tts: PocketTTS, fixture_dir: Path) -> list[list[Frame]]:
    """The three lines on one scheduler; the third joins once the first is under way."""
    jobs = _jobs(tts, fixture_dir)
    handles = [scheduler.submit(*jobs[0]), scheduler.submit(*jobs[1])]
    got: list[list[Frame]] = [[next(handles[0])], []]
    handles.append(scheduler.submit(*jobs[2]))
    got.append([])
    for i, handle in enumerate(handles):
        got[i].extend(handle)
    return got


def _max_diff(a: list[Frame], b: list[Frame]) -> float:
    assert [(f.chunk_index, f.frame_index, f.audio.size) for f in a] == [
        (f.chunk_index, f.frame_index, f.audio.size) for f in b
    ]
    return max(float(np.abs(x.audio - y.audio).max()) for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("pack", ["committed", "built now"])
def test_fp32_streams_together_give_the_same_bytes_as_alone(
    fp32, built_now, fixture_dir, pack
) -> None:
    if pack == "built now":
        fp32 = PocketTTS.open(runtime="onnx", model_dir=built_now)
    assert batching(fp32.runtime) is not None
    alone = _alone(fp32, fixture_dir)
    scheduler = Scheduler(fp32.runtime)
    try:
        together = _together(scheduler, fp32, fixture_dir)
        sizes = scheduler.stats.batch_sizes
        assert scheduler.stats.batched_calls > 0
    finally:
        scheduler.close()
    assert len({len(frames) for frames in alone}) == 3  # three different lengths
    assert any(f.is_pause for f in alone[2])
    for a, t in zip(alone, together, strict=True):
        assert _max_diff(a, t) == 0.0
    assert sizes[3] > 0 and sizes[2] > 0  # all three shared ticks, then two
    assert scheduler.stats.frames == sum(sum(not f.is_pause for f in a) for a in alone)


@pytest.mark.parametrize("pack", ["committed", "built now"])
def test_int8_streams_give_the_same_bytes_together_and_alone(
    int8, built_now, fixture_dir, pack
) -> None:
    if pack == "built now":
        int8 = PocketTTS.open(runtime="onnx", model_dir=built_now, precision="int8")
    alone = _alone(int8, fixture_dir)
    scheduler = Scheduler(int8.runtime)
    try:
        together = _together(scheduler, int8, fixture_dir)
        assert scheduler.stats.batch_sizes[3] > 0
    finally:
        scheduler.close()
    for a, t in zip(alone, together, strict=True):
        assert _max_diff(a, t) == 0.0


def _pack_without_batched_graphs(pack_dir: Path, out: Path) -> Path:
    """The tiny pack as packs built before batching are: no batched graphs."""
    shutil.copytree(pack_dir, out)
    data = json.loads((out / "pack.json").read_text(encoding="utf-8"))
    for graphs in data["graphs"].values():
        for name in (*BATCH_GRAPHS, MIMI_BATCH_GRAPH):
            file = graphs.pop(name, None)
            for gone in (file, f"{file}.data") if file else ():
                if (out / gone).exists():
                    (out / gone).unlink()
                data["files"].pop(gone, None)
    (out / "pack.json").write_text(json.dumps(seal(data)), encoding="utf-8")
    assert not any("batch" in name for name in PackManifest.read(out).files)
    return out


def test_a_pack_without_batched_graphs_is_served_round_robin(
    pack_dir, fixture_dir, tmp_path
) -> None:
    old = PocketTTS.open(
        runtime="onnx", model_dir=_pack_without_batched_graphs(pack_dir, tmp_path / "old")
    )
    assert batching(old.runtime) is None
    assert "built before batching" in (old.runtime.batch_unavailable_reason or "")
    scheduler = Scheduler(old.runtime)
    try:
        assert not scheduler.batches
        together = _together(scheduler, old, fixture_dir)
        sizes = scheduler.stats.batch_sizes
        assert scheduler.stats.batched_calls == 0
    finally:
        scheduler.close()
    # One row at a time, each stream a frame per tick: exactly the audio alone.
    for a, t in zip(_alone(old, fixture_dir), together, strict=True):
        assert _max_diff(a, t) == 0.0
    assert sizes[3] > 0


def test_a_cancelled_stream_leaves_within_a_frame(fp32, fixture_dir) -> None:
    jobs = _jobs(fp32, fixture_dir)
    alone = _alone(fp32, fixture_dir)
    traces: list[ChunkTrace] = []
    scheduler = Scheduler(fp32.runtime)
    try:
        chunks, voice, noise, settings = jobs[0]
        cancelled = scheduler.submit(chunks, voice, noise, settings, traces.append)
        other = scheduler.submit(*jobs[1])
        next(cancelled)
        steps = sum(len(t.eos_logits) for t in traces)
        cancelled.cancel()
        rest = list(other)
        assert list(cancelled) == []
        assert sum(len(t.eos_logits) for t in traces) <= steps + 1
        assert _max_diff(alone[1], rest) == 0.0
        assert scheduler.active_streams == 0
    finally:
        scheduler.close()


def test_a_failing_stream_fails_alone(fp32, fixture_dir) -> None:
    jobs = _jobs(fp32, fixture_dir)

    def broken_text() -> Iterator:
        yield from jobs[0][0][:1]
        raise ValueError("the text source broke")

    scheduler = Scheduler(fp32.runtime)
    try:
        bad = scheduler.submit(broken_text(), *jobs[0][1:])
        good = scheduler.submit(*jobs[1])
        with pytest.raises(ValueError, match="text source broke"):
            list(bad)
        frames = list(good)
    finally:
        scheduler.close()
    assert _max_diff(_alone(fp32, fixture_dir)[1], frames) == 0.0


def test_synthesize_many_and_async_give_each_text_its_audio(fp32, fixture_dir) -> None:
    voices = _voices(fp32, fixture_dir)
    options = [SpeakOptions(seed=s, max_tokens=12) for s in SEEDS]
    alone = [fp32.synthesize(t, v, o) for t, v, o in zip(TEXTS, voices, options, strict=True)]
    many = fp32.synthesize_many(list(TEXTS), voices, options)
    for a, m in zip(alone, many, strict=True):
        assert np.array_equal(a, m)

    async def main() -> list[np.ndarray]:
        return await asyncio.gather(
            *(fp32.asynthesize(t, v, o) for t, v, o in zip(TEXTS, voices, options, strict=True))
        )

    for a, m in zip(alone, asyncio.run(main()), strict=True):
        assert np.array_equal(a, m)
    with pytest.raises(ValueError, match="3 texts need 3 voices"):
        fp32.synthesize_many(list(TEXTS), voices[:2])


def test_pauses_keep_their_place_in_a_stream(fp32, fixture_dir) -> None:
    jobs = _jobs(fp32, fixture_dir)
    scheduler = Scheduler(fp32.runtime)
    try:
        frames = list(scheduler.submit(*jobs[2]))
    finally:
        scheduler.close()
    kinds = [f.is_pause for f in frames]
    pause = next(item for item in jobs[2][0] if isinstance(item, Pause))
    silent = int(round(pause.seconds * fp32.sample_rate))
    assert sum(f.audio.size for f in frames if f.is_pause) == silent
    start = kinds.index(True)
    assert start > 0 and not any(kinds[start + sum(kinds) :])  # speech, silence, speech


class _CallLog:
    """The runtime, with its FlowLM calls written down: ``(name, text tokens, tick)``
    (the tick: how many the ``scheduler`` had finished). A row ``step`` waits while
    ``steps`` is clear."""

    def __init__(self, runtime) -> None:
        self._runtime = runtime
        self.config = runtime.config
        self.scheduler: Scheduler | None = None
        self.calls: list[tuple[str, int, int]] = []
        self.steps = threading.Event()
        self.steps.set()

    def __getattr__(self, name: str):
        attr = getattr(self._runtime, name)
        if name not in ("prefill_then_step", "step", "step_batch"):
            return attr

        def logged(*args, **kwargs):
            if name == "step":
                assert self.steps.wait(120), "the test never let the step run"
            tokens = args[1].shape[0] if name == "prefill_then_step" else 0
            assert self.scheduler is not None
            self.calls.append((name, tokens, self.scheduler._stats.ticks))
            return attr(*args, **kwargs)

        return logged


def _prefills_per_tick(calls: list[tuple[str, int, int]]) -> list[list[int]]:
    """The text tokens of each tick's prefills, for the ticks that had any."""
    ticks: dict[int, list[int]] = {}
    for name, tokens, tick in calls:
        if name == "prefill_then_step":
            ticks.setdefault(tick, []).append(tokens)
    return [ticks[t] for t in sorted(ticks)]


LONG = " ".join(["Every stream here speaks a long sentence of many words."] * 3)


@pytest.mark.parametrize(
    ("first", "texts", "max_tokens", "settled", "expected"),
    [
        (None, (LONG, LONG, LONG), 50, True, [3]),  # nobody under way: all start at once
        (LONG, (LONG, LONG), 50, True, [1, 1, 1]),  # under way: one long prefill a tick
        ("Under way.", TEXTS + TEXTS, 12, True, [1, 6]),  # short ones share a tick
        (LONG, (LONG, LONG), 50, False, [1, 2]),  # just started: a burst starts at once
    ],
    ids=["at-once", "long-joins", "short-joins", "burst"],
)
def test_the_prefills_of_a_tick_hold_one_chunk_of_tokens(
    fp32, fixture_dir, monkeypatch, first, texts, max_tokens, settled, expected
) -> None:
    """Streams that join running ones start while their prefills fit one full chunk's
    tokens (so a join stalls the running streams by about one prefill at most); with
    no stream under way, all start in the first tick; with the one under way just
    started (fewer than ``JOIN_BURST_FRAMES`` frames: here one), they all start in the
    next (``settled``: that one frame counts as settled)."""
    if settled:
        monkeypatch.setattr(scheduler_module, "JOIN_BURST_FRAMES", 1)
    assert scheduler_module.JOIN_BURST_FRAMES > 1 or settled
    log = _CallLog(fp32.runtime)
    assert batching(log) is not None
    voice = fp32.voices.load(fixture_dir / "voice.safetensors")
    scheduler = log.scheduler = Scheduler(log)
    scripts, handles = [], []

    def submit(seed: int, text: str) -> None:
        opts = SpeakOptions(seed=seed, max_tokens=max_tokens)
        scripts.append(fp32._script_for(text, opts))
        job = (scripts[-1], voice, fp32._noise_for(opts), fp32._settings_for(opts))
        handles.append(scheduler.submit(*job))

    try:
        if first is not None:
            log.steps.clear()  # its second frame waits: it is still under way as they join
            submit(99, first)
            next(iter(handles[0]))
        with scheduler._cond:  # the scheduler sees them all at once
            for seed, text in enumerate(texts):
                submit(seed, text)
        log.steps.set()
        for handle in handles:
            list(handle)
    finally:
        log.steps.set()
        scheduler.close()
    ticks = _prefills_per_tick(log.calls)
    budgeted = all(len(t) == 1 or sum(t) <= PREFILL_TOKENS_PER_TICK for t in ticks[1:])
    assert budgeted or not settled, ticks
    assert [len(t) for t in ticks[: len(expected)]] == expected, ticks
    chunks = sum(1 for script in scripts for item in script if not isinstance(item, Pause))
    assert sum(map(len, ticks)) == chunks  # every chunk's prefill, once


class _SteppedRuntime:
    """The runtime, with each FlowLM call held until the test lets it run, and the
    stream (by the order its decoder was made) of every Mimi call written down."""

    def __init__(self, runtime) -> None:
        self._runtime = runtime
        self.config = runtime.config
        self.entered = threading.Semaphore(0)  # released as each FlowLM call starts
        self.gate = threading.Semaphore(0)
        self.free = threading.Event()  # set: calls no longer wait for the gate
        self.decoders: list[object] = []
        self.decoded: list[int] = []

    def __getattr__(self, name: str):
        attr = getattr(self._runtime, name)
        if name not in ("prefill_then_step", "step"):
            return attr

        def held(*args, **kwargs):
            self.entered.release()
            if not self.free.is_set():
                assert self.gate.acquire(timeout=120), "the test never let this call run"
            return attr(*args, **kwargs)

        return held

    def start_decoder(self):
        decoder = self._runtime.start_decoder()
        self.decoders.append(decoder)
        return decoder

    def decode(self, decoder, latents):
        self.decoded.append(next(i for i, d in enumerate(self.decoders) if d is decoder))
        return self._runtime.decode(decoder, latents)


def test_a_stream_with_nothing_to_play_is_decoded_first(fp32, fixture_dir) -> None:
    """B joins in the tick where A hands Mimi a pair of frames: B's first frame (its
    listener has nothing yet) is decoded before A's pair (A has a frame unread)."""
    stepped = _SteppedRuntime(fp32.runtime)
    scheduler = Scheduler(stepped, batched=False, threaded_decoder=False)
    opts = SpeakOptions(seed=1, max_tokens=50, eos_threshold=1e9)
    voice = fp32.voices.load(fixture_dir / "voice.safetensors")

    def submit(text: str):
        job = (fp32._script_for(text, opts), voice, fp32._noise_for(opts), fp32._settings_for(opts))
        assert sum(not isinstance(item, Pause) for item in job[0]) == 1  # one chunk each
        return scheduler.submit(*job)

    try:
        a = submit("A first stream, one chunk of a few words.")
        assert stepped.entered.acquire(timeout=120)  # tick 1: A's prefill and first frame
        stepped.gate.release()
        assert stepped.entered.acquire(timeout=120)  # tick 2: A's second frame (held)
        b = submit("Then B.")  # joins tick 3, where A's second and third frames go to Mimi
        stepped.free.set()
        stepped.gate.release()
        frames = [list(b), list(a)]  # A unread meanwhile (it sits out at max_ahead)
    finally:
        stepped.free.set()
        stepped.gate.release()
        scheduler.close()
    assert all(frames) and DECODE_BATCH == 2
    assert stepped.decoded[:3] == [0, 1, 0], stepped.decoded


class _HeldMimi:
    """The runtime, with every Mimi call but the first held until ``go`` is set, and
    each text prefill counted (``prefills``, ``second_prefill``). The first frame of a
    lone stream is decoded before its next step (``test_a_lone_first_frame_...``)."""

    def __init__(self, runtime) -> None:
        self._runtime = runtime
        self.config = runtime.config
        self.go = threading.Event()
        self.decoding = threading.Event()  # a Mimi call is held
        self.second_prefill = threading.Event()
        self.prefills = 0
        self.decodes = 0

    def __getattr__(self, name: str):
        return getattr(self._runtime, name)

    def prefill_then_step(self, *args):
        self.prefills += 1
        if self.prefills == 2:
            self.second_prefill.set()
        return self._runtime.prefill_then_step(*args)

    def decode(self, decoder, latents):
        self.decodes += 1
        if self.decodes > 1:
            self.decoding.set()
            assert self.go.wait(120), "the test never let Mimi run"
        return self._runtime.decode(decoder, latents)


def test_a_joining_stream_does_not_wait_for_mimi_to_catch_up(fp32, fixture_dir) -> None:
    """With Mimi behind by as many ticks as the FlowLM may run ahead (the FlowLM waits),
    a stream that joins still gets its prefill and first frame at once."""
    held = _HeldMimi(fp32.runtime)
    scheduler = Scheduler(held, batched=False)
    opts = SpeakOptions(seed=1, eos_threshold=1e9)
    voice = fp32.voices.load(fixture_dir / "voice.safetensors")

    def submit(text: str):
        job = (fp32._script_for(text, opts), voice, fp32._noise_for(opts), fp32._settings_for(opts))
        return scheduler.submit(*job)

    deadline = time.monotonic() + 120
    try:
        a = submit("A first stream, long enough to fill the queue of Mimi work.")
        assert held.decoding.wait(120)
        while scheduler._mimi_ticks < MAX_MIMI_TICKS:  # the FlowLM now waits for Mimi
            assert time.monotonic() < deadline, "the FlowLM never got ahead of Mimi"
            time.sleep(0.005)
        b = submit("Then B.")
        assert held.second_prefill.wait(60), "B waited for Mimi to catch up"
        held.go.set()
        frames = [list(b), list(a)]
    finally:
        held.go.set()
        scheduler.close()
    assert all(frames)


class _OrderLog:
    """The runtime, with the order of its FlowLM steps and Mimi calls written down
    (``start``/``end`` of each). The first Mimi call is held until a step begins, or
    for a second at most: a step that does not wait for it is seen to overlap it."""

    def __init__(self, runtime) -> None:
        self._runtime = runtime
        self.config = runtime.config
        self.events: list[str] = []
        self.stepping = threading.Event()
        self._decodes = 0

    def __getattr__(self, name: str):
        attr = getattr(self._runtime, name)
        if name not in ("step", "step_batch", "decode", "decode_batch"):
            return attr
        kind = "decode" if name.startswith("decode") else "step"

        def logged(*args, **kwargs):
            self.events.append(f"{kind} start")
            if kind == "step":
                self.stepping.set()
            else:
                self._decodes += 1
                if self._decodes == 1:
                    self.stepping.wait(1.0)  # the pass path takes the whole second
            try:
                return attr(*args, **kwargs)
            finally:
                self.events.append(f"{kind} end")

        return logged


@pytest.mark.parametrize("batched", [True, False], ids=["batched", "row-calls"])
def test_a_lone_first_frame_is_decoded_before_the_next_step(fp32, fixture_dir, batched) -> None:
    """With no stream under way, a first frame's audio is decoded before the FlowLM
    takes its next step: the decode has the cores to
    itself, and the listener hears it sooner."""
    log = _OrderLog(fp32.runtime)
    scheduler = Scheduler(log, batched=batched)
    opts = SpeakOptions(seed=3, output_chain=False)
    voice = fp32.voices.load(fixture_dir / "voice.safetensors")
    try:
        job = (
            fp32._script_for(TEXTS[0], opts),
            voice,
            fp32._noise_for(opts),
            fp32._settings_for(opts),
        )
        frames = list(scheduler.submit(*job))
    finally:
        scheduler.close()
    assert len(frames) > 2
    first_step = log.events.index("step start")
    assert log.events.index("decode end") < first_step, log.events[: first_step + 1]


def test_streams_that_sit_out_keep_their_caches_while_others_join(fp32, fixture_dir) -> None:
    """The last two streams are read while the first two sit out (their readers wait,
    ``max_ahead`` 2), and new chunks of the read ones join the batch meanwhile: every
    stream still gives its audio alone, bit for bit (a joining row must not take a row
    that a stream sitting out still holds)."""
    texts = (
        "The first stream, which waits. It has two sentences in it at least.",
        "The second one waits as well, until the last two are done speaking.",
        "One, two, three. Four, five, six. Seven, eight, nine. Ten, eleven, twelve.",
        "Alpha, beta, gamma. Delta, epsilon, zeta. Eta, theta, iota. Kappa, lambda.",
    )
    voice = fp32.voices.load(fixture_dir / "voice.safetensors")

    def jobs():
        out = []
        for seed, text in enumerate(texts):
            opts = SpeakOptions(seed=seed, max_tokens=12)
            out.append(
                (
                    fp32._script_for(text, opts),
                    voice,
                    fp32._noise_for(opts),
                    fp32._settings_for(opts),
                )
            )
        return out

    alone = [frames_alone(fp32.runtime, *job) for job in jobs()]
    scheduler = Scheduler(fp32.runtime, max_ahead=2)
    try:
        handles = [scheduler.submit(*job) for job in jobs()]
        got: list[list[Frame]] = [[] for _ in texts]
        readers = [threading.Thread(target=got[i].extend, args=(handles[i],)) for i in (2, 3)]
        for reader in readers:
            reader.start()
        for reader in readers:
            reader.join(300)
        assert not any(reader.is_alive() for reader in readers)
        for i in (0, 1):
            got[i].extend(handles[i])
        assert scheduler.stats.batched_calls > 0
    finally:
        scheduler.close()
    assert all(len(alone[i]) > 2 * len([c for c in jobs()[i][0]]) for i in (0, 1))
    for ours, theirs in zip(got, alone, strict=True):
        assert _max_diff(ours, theirs) == 0.0


class _BrokenMimi:
    """The runtime, whose Mimi decode fails for the decoders made after ``broken_from``."""

    def __init__(self, runtime, broken_from: int) -> None:
        self._runtime = runtime
        self.config = runtime.config
        self._broken = broken_from
        self._decoders: list[object] = []

    def __getattr__(self, name: str):
        return getattr(self._runtime, name)

    def start_decoder(self):
        decoder = self._runtime.start_decoder()
        self._decoders.append(decoder)
        return decoder

    def decode(self, decoder, latents):
        if next(i for i, d in enumerate(self._decoders) if d is decoder) >= self._broken:
            raise RuntimeError("Mimi failed for this stream")
        return self._runtime.decode(decoder, latents)


def test_a_stream_failed_by_mimi_leaves_the_ticks_once_its_reader_hears(fp32, fixture_dir) -> None:
    """The error reaches the reader, and the stream stops taking ticks (it used to be
    stepped on until it sat out for good, unless the reader cancelled it)."""
    runtime = _BrokenMimi(fp32.runtime, broken_from=1)
    scheduler = Scheduler(runtime, batched=False)
    opts = SpeakOptions(seed=1, eos_threshold=1e9)
    voice = fp32.voices.load(fixture_dir / "voice.safetensors")
    job = lambda text: (  # noqa: E731
        fp32._script_for(text, opts),
        voice,
        fp32._noise_for(opts),
        fp32._settings_for(opts),
    )
    try:
        good = scheduler.submit(*job("The good stream."))
        next(good)
        bad = scheduler.submit(*job("The stream whose audio cannot be decoded."))
        with pytest.raises(RuntimeError, match="Mimi failed"):
            list(bad)
        frames = [1, *(1 for _ in good)]
        deadline = time.monotonic() + 60
        while scheduler.active_streams:  # the good one is done: the bad one must go too
            assert time.monotonic() < deadline, "the failed stream still takes ticks"
            time.sleep(0.005)
    finally:
        scheduler.close()
    assert len(frames) > 1
