"""One batched Mimi decode per tick (states stacked along the batch), on the committed tiny pack.

Real ONNX Runtime sessions on the pack's ``mimi_decoder_batch``: a stream's samples
are the same bytes in a call of one row or of many, whoever joins or leaves; a pack
without the graph (built before it, or int8) decodes each stream on its own.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from pocketcli import PocketTTS
from pocketcli.engine.scheduler import Scheduler
from pocketcli.options import SpeakOptions
from pocketcli.packs.builder import write_batch_graphs
from pocketcli.packs.checkpoint import read_checkpoint
from pocketcli.packs.manifest import MIMI_BATCH_GRAPH, PackManifest, seal
from pocketcli.runtimes.base import decode_batching
from pocketcli.runtimes.onnx import OnnxRuntime
from tests.support.alone import frames_alone

TEXTS = (
    "The first line is the longest one, and it goes on for a while.",
    "Short.",
    "A third line joins later on.",
    "And a fourth one, after the second has gone.",
)


@pytest.fixture(scope="module")
def fp32(pack_dir) -> PocketTTS:
    return PocketTTS.open(runtime="onnx", model_dir=pack_dir)


def _job(tts: PocketTTS, fixture_dir: Path, i: int):
    opts = SpeakOptions(seed=10 + i, max_tokens=12)
    voice = tts.voices.load(fixture_dir / "voice.safetensors") if i % 2 == 0 else None
    return (tts._script_for(TEXTS[i], opts), voice, tts._noise_for(opts), tts._settings_for(opts))


def _samples(frames) -> np.ndarray:
    return np.concatenate([f.audio for f in frames])


def _together(tts: PocketTTS, fixture_dir: Path) -> tuple[list[np.ndarray], Scheduler]:
    """Two streams start; a third joins after a few frames; a fourth once the second ends."""
    scheduler = Scheduler(tts.runtime)
    try:
        first = scheduler.submit(*_job(tts, fixture_dir, 0))
        second = scheduler.submit(*_job(tts, fixture_dir, 1))
        got = [[next(first) for _ in range(3)], [], [], []]
        third = scheduler.submit(*_job(tts, fixture_dir, 2))
        got[1] = list(second)
        fourth = scheduler.submit(*_job(tts, fixture_dir, 3))
        for i, handle in ((0, first), (2, third), (3, fourth)):
            got[i].extend(handle)
    finally:
        scheduler.close()
    return [_samples(frames) for frames in got], scheduler


def test_mimi_decodes_many_streams_in_one_call_with_the_bytes_of_each_alone(
    fp32, fixture_dir
) -> None:
    assert decode_batching(fp32.runtime) is not None
    alone = [_samples(frames_alone(fp32.runtime, *_job(fp32, fixture_dir, i))) for i in range(4)]
    assert len({a.size for a in alone}) > 1
    # Which frames share a Mimi call depends on when each stream's reader reads (two
    # lanes; a reader behind sits out): on a loaded machine a run may have none. Every
    # run must give each stream its bytes alone; one of at most four must batch.
    batched = 0
    for _ in range(4):
        together, scheduler = _together(fp32, fixture_dir)
        for a, t in zip(alone, together, strict=True):
            assert a.shape == t.shape and np.array_equal(a, t)
        batched = scheduler.stats.batched_decodes
        if batched:
            break
    assert batched > 0  # several streams' frames in one Mimi call


def test_stacked_rows_are_each_decoded_as_alone(pack_dir, tmp_path) -> None:
    """decode_batch on streams at different points (one joins late, one leaves) against
    each stream's own one-row calls: bit for bit, and the row graph within 1e-5."""
    runtime = OnnxRuntime(pack_dir)
    rng = np.random.default_rng(5)
    dim = runtime.config.flow_lm.latent_dim
    calls = [rng.standard_normal((3, 2, dim)).astype(np.float32) for _ in range(4)]
    together = [runtime.start_decoder() for _ in range(3)]
    alone = [runtime.start_decoder() for _ in range(3)]
    rows_graph = _row_graph_runtime(pack_dir, tmp_path)
    by_rows = [rows_graph.start_decoder() for _ in range(3)]
    # Call c decodes the streams in `members[c]` (stream 2 joins at call 1, 0 leaves after 2).
    members = [(0, 1), (0, 1, 2), (2, 0, 1), (1, 2)]
    for c, rows in enumerate(members):
        latents = np.stack([calls[c][r] for r in rows])
        audio = runtime.decode_batch([together[r] for r in rows], latents)
        for i, r in enumerate(rows):
            own = runtime.decode(alone[r], latents[i])
            assert np.array_equal(audio[i], own)
            assert np.abs(rows_graph.decode(by_rows[r], latents[i]) - own).max() < 1e-5


def _row_graph_runtime(pack_dir: Path, tmp_path: Path) -> OnnxRuntime:
    # The pack's one-stream decoder: the same pack without the batched graph.
    runtime = OnnxRuntime(_pack_without_batched_mimi(pack_dir, tmp_path / "rows"))
    assert decode_batching(runtime) is None
    return runtime


def _pack_without_batched_mimi(pack_dir: Path, out: Path) -> Path:
    """The tiny pack as packs built before the batched Mimi decoder are."""
    shutil.copytree(pack_dir, out)
    data = json.loads((out / "pack.json").read_text(encoding="utf-8"))
    file = data["graphs"]["fp32"].pop(MIMI_BATCH_GRAPH)
    for gone in (file, f"{file}.data"):
        (out / gone).unlink()
        data["files"].pop(gone)
    (out / "pack.json").write_text(json.dumps(seal(data)), encoding="utf-8")
    assert MIMI_BATCH_GRAPH not in PackManifest.read(out).graphs["fp32"]
    return out


def test_a_pack_without_the_batched_decoder_decodes_per_stream(
    fp32, pack_dir, fixture_dir, tmp_path
) -> None:
    old = PocketTTS.open(
        runtime="onnx", model_dir=_pack_without_batched_mimi(pack_dir, tmp_path / "old")
    )
    assert decode_batching(old.runtime) is None
    assert MIMI_BATCH_GRAPH in (old.runtime.decode_batch_unavailable_reason or "")
    alone = [_samples(frames_alone(old.runtime, *_job(old, fixture_dir, i))) for i in range(4)]
    together, scheduler = _together(old, fixture_dir)
    assert scheduler.stats.batched_decodes == 0 and scheduler.stats.batched_calls > 0
    new, _ = _together(fp32, fixture_dir)
    for a, t, n in zip(alone, together, new, strict=True):
        assert np.array_equal(a, t)
        assert np.abs(a - n).max() < 1e-5  # the row graph and the batched one, fp32


def test_int8_packs_decode_each_stream_on_its_own(pack_dir) -> None:
    runtime = OnnxRuntime(pack_dir, precision="int8")
    assert decode_batching(runtime) is None  # dynamic int8 scales a call by one number


def test_the_builder_writes_the_batched_decoder_for_fp32_only(pack_dir, tmp_path) -> None:
    manifest = PackManifest.read(pack_dir)
    weights = read_checkpoint(pack_dir.parent / "model.safetensors")
    files = write_batch_graphs(weights, manifest.config, tmp_path, ("fp32",))
    assert files["fp32"][MIMI_BATCH_GRAPH] == manifest.graphs["fp32"][MIMI_BATCH_GRAPH]
    built = tmp_path / files["fp32"][MIMI_BATCH_GRAPH]
    assert built.read_bytes() == (pack_dir / built.name).read_bytes()
    assert (tmp_path / f"{built.name}.data").read_bytes() == (
        pack_dir / f"{built.name}.data"
    ).read_bytes()
    assert MIMI_BATCH_GRAPH not in manifest.graphs["int8"]


def test_a_stack_of_kv_caches_goes_no_further_than_its_rows_may(pack_dir) -> None:
    """The batched step's stacked caches stop at the rows' limit (in whole steps of
    positions), not a step past the longest row: 8 full-size rows cost 48 KB a position."""
    runtime = OnnxRuntime(pack_dir)
    dim = runtime.config.flow_lm.latent_dim
    seqs = [runtime.start_sequence(None, extra_capacity=n) for n in (10, 30)]
    batch = runtime.start_batch()
    for _ in range(5):
        runtime.step_batch(batch, seqs, np.zeros((2, dim), np.float32))
    assert batch.capacity == 64  # both limits (10 and 30 positions) fit in one step
    assert [s.length for s in seqs] == [5, 5]
