"""The ONNX runtime's batch stack when rows change hands: a sequence that takes over a row
gets the results it gets alone, whatever the row's former holder left there (its longer
cache, a NaN from a stream that failed), a longer chunk that joins a rebuilt stack has
room, and a row whose holder moved out is free again. Real ONNX Runtime sessions on the
committed tiny pack, through the runtime's own calls (as the scheduler makes them)."""

from __future__ import annotations

import numpy as np
import pytest

from pocketcli import PocketTTS


@pytest.fixture(scope="module")
def tiny(pack_dir, fixture_dir):
    tts = PocketTTS.open(runtime="onnx", model_dir=pack_dir)
    return tts.runtime, tts.voices.load(fixture_dir / "voice.safetensors")


def _started(runtime, voice, tokens: int, extra: int = 100):
    """A chunk of ``tokens`` text tokens, its prefill and first frame made (as a stream's
    first tick makes them)."""
    seq = runtime.start_sequence(voice, extra)
    emb = runtime.embed_text((np.arange(tokens, dtype=np.int64) * 7 + 3) % 3000)
    nan = np.full(runtime.config.flow_lm.latent_dim, np.nan, np.float32)  # the BOS frame
    runtime.prefill_then_step(seq, emb, nan)
    return seq


def _latent(runtime, seed: int, value: float | None = None) -> np.ndarray:
    dim = runtime.config.flow_lm.latent_dim
    if value is not None:
        return np.full(dim, value, np.float32)
    return np.random.default_rng(seed).standard_normal(dim).astype(np.float32)


def _alone(runtime, voice, tokens: int, latents: list[np.ndarray], extra: int = 100):
    """What a chunk's steps give alone (its own one-row stack)."""
    seq = _started(runtime, voice, tokens, extra)
    return [runtime.step(seq, lat)[0] for lat in latents]


def _failed_holder(runtime, voice, batch, tokens: int, finite_steps: int) -> int:
    """A stream that held row 0 of ``batch``, stepped there, then failed on an overflowing
    latent (its last position's keys are NaN) and was dropped: its length at the end."""
    holder = _started(runtime, voice, tokens)
    for i in range(finite_steps):
        runtime.step_batch(batch, [holder], _latent(runtime, i)[None])
    z, _ = runtime.step_batch(batch, [holder], _latent(runtime, 0, np.inf)[None])
    assert not np.isfinite(z).all()  # the failure: NaN in its cache from here on
    length = holder.length
    del holder  # its stream ended: the row is free for the next to join
    return length


@pytest.mark.parametrize("gap", [1, 2])
def test_a_newcomer_in_a_failed_streams_row_gets_its_results_alone(tiny, gap) -> None:
    """The newcomer is ``gap`` positions shorter than the failed holder: its NaN sits at the
    newcomer's own next position (gap 1) or past it, under the mask (gap 2); neither may
    reach the newcomer (a masked position is multiplied by an exact zero, which a NaN
    survives)."""
    runtime, voice = tiny
    batch = runtime.start_batch()
    held_for = _failed_holder(runtime, voice, batch, tokens=5, finite_steps=3)
    newcomer = _started(runtime, voice, tokens=5 + 4 - gap)  # the holder took 4 steps
    assert newcomer.length == held_for - gap
    latents = [_latent(runtime, 10 + i) for i in range(3)]
    got = [runtime.step_batch(batch, [newcomer], lat[None])[0][0] for lat in latents]
    alone = _alone(runtime, voice, 5 + 4 - gap, latents)
    assert all(np.isfinite(z).all() for z in got), "a failed stream's NaN reached the newcomer"
    assert all(np.array_equal(a, b) for a, b in zip(got, alone, strict=True))


def test_a_newcomer_is_clean_after_a_failed_call_that_had_placed_its_row(tiny) -> None:
    """A stream joins the stack in a call that fails (ONNX Runtime raised, or its latents
    were wrong) after it was copied in: the row's next holder is cleared as far as that
    copy went. The stream carried a NaN from its own failure before it joined."""
    runtime, voice = tiny
    batch = runtime.start_batch()
    runner = _started(runtime, voice, tokens=3)
    runtime.step_batch(batch, [runner], _latent(runtime, 1)[None])  # the stack exists
    poisoned = _started(runtime, voice, tokens=8)
    runtime.step(poisoned, _latent(runtime, 0, np.inf))  # alone: NaN at its last position
    with pytest.raises(ValueError):
        wrong = np.zeros((1, runtime.config.flow_lm.latent_dim), np.float32)  # one for two
        runtime.step_batch(batch, [runner, poisoned], wrong)
    length = poisoned.length
    del poisoned  # the call failed: its stream is dropped
    newcomer = _started(runtime, voice, tokens=8)  # one step shorter than the failed one
    assert newcomer.length == length - 1
    lat = _latent(runtime, 5)
    z, _ = runtime.step_batch(batch, [runner, newcomer], np.stack([_latent(runtime, 6), lat]))
    assert np.isfinite(z[1]).all(), "the failed stream's NaN reached the newcomer"
    assert np.array_equal(z[1], _alone(runtime, voice, 8, [lat])[0])


def test_a_longer_chunk_joining_a_rebuilt_stack_has_room(tiny) -> None:
    """A short chunk (a small cache limit) runs alone in the stack; a chunk longer than
    that limit joins it: the rebuilt stack is sized for the longer one."""
    runtime, voice = tiny
    short_extra, long_tokens = 12, 44
    batch = runtime.start_batch()
    short = _started(runtime, voice, tokens=5, extra=short_extra)
    first = _latent(runtime, 1)
    runtime.step_batch(batch, [short], first[None])
    long = _started(runtime, voice, tokens=long_tokens)
    assert long.length > short.limit + 1  # it would not fit a stack sized for the short one
    latents = [(_latent(runtime, 2 + i), _latent(runtime, 20 + i)) for i in range(3)]
    got = {"short": [], "long": []}
    for a, b in latents:
        z, _ = runtime.step_batch(batch, [short, long], np.stack([a, b]))
        got["short"].append(z[0])
        got["long"].append(z[1])
    alone_short = _alone(runtime, voice, 5, [first] + [a for a, _ in latents], short_extra)[1:]
    alone_long = _alone(runtime, voice, long_tokens, [b for _, b in latents])
    assert all(np.array_equal(x, y) for x, y in zip(got["short"], alone_short, strict=True))
    assert all(np.array_equal(x, y) for x, y in zip(got["long"], alone_long, strict=True))


def test_a_row_whose_holder_moved_out_is_taken_without_rebuilding_the_stack(tiny) -> None:
    """Two streams in the stack; one goes on alone for a frame (a tick of its own takes the
    row calls, which move it into a stack of its own): its row is free, and a third stream
    joining takes it, the running stream's row untouched (no copy of it)."""
    runtime, voice = tiny
    batch = runtime.start_batch()
    a, b = _started(runtime, voice, tokens=4), _started(runtime, voice, tokens=6)
    runtime.step_batch(batch, [a, b], np.stack([_latent(runtime, 1), _latent(runtime, 2)]))
    stack = batch.keys[0]
    runtime.step(b, _latent(runtime, 3))  # b alone: out of the shared stack, still alive
    c = _started(runtime, voice, tokens=5)
    lat_a, lat_c = _latent(runtime, 4), _latent(runtime, 5)
    z, _ = runtime.step_batch(batch, [a, c], np.stack([lat_a, lat_c]))
    assert batch.keys[0] is stack, "the freed row stayed held: the whole stack was rebuilt"
    assert np.array_equal(z[1], _alone(runtime, voice, 5, [lat_c])[0])
    assert b.length > 0  # b lived on through it all (a live sequence, not a dropped one)


def test_a_rebuilt_stack_has_room_for_the_steps_after_it(tiny) -> None:
    """A chunk whose next position is the last of a whole step of capacity: the stack
    rebuilt for it has a step of room more, so the frames after it reuse it (a stack
    rebuilt at every step would copy every row each frame)."""
    runtime, voice = tiny
    batch = runtime.start_batch()
    seq = _started(runtime, voice, tokens=35)
    assert seq.length + 1 == 64  # one position short of a whole step (64) of capacity
    stacks = []
    for i in range(3):
        runtime.step_batch(batch, [seq], _latent(runtime, i)[None])
        stacks.append(batch.keys[0])
    assert stacks[1] is stacks[0] and stacks[2] is stacks[0]


def test_a_rebuilt_stack_has_no_more_room_than_it_needs(tiny) -> None:
    """Every step reads the whole capacity of every row, so a rebuilt stack is sized by
    the positions its next step needs plus a few (``STACK_ROOM``), in whole steps: a
    chunk whose next position is 39 gets 64 positions, not 128 (a whole step of room
    on top made each frame read 64-127 unused positions a row), and it reuses the stack
    until its positions reach the capacity."""
    from pocketcli.runtimes.onnx import CACHE_STEP, STACK_ROOM

    runtime, voice = tiny
    batch = runtime.start_batch()
    seq = _started(runtime, voice, tokens=10)
    assert seq.length + 1 + STACK_ROOM <= CACHE_STEP < seq.limit
    runtime.step_batch(batch, [seq], _latent(runtime, 0)[None])
    assert batch.capacity == CACHE_STEP
    stack = batch.keys[0]
    while seq.length < CACHE_STEP:
        runtime.step_batch(batch, [seq], _latent(runtime, seq.length)[None])
        assert batch.keys[0] is stack
