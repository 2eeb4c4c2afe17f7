"""A pack whose batched FlowLM step takes embeddings runs every FlowLM call through it:
the text and voice prefills too, as one row, so the one-sequence step and flow head are
never loaded (one copy of the weights in memory). A pack built before that (its batched
step takes latents only; ``tests/fixtures/batch-v1`` keeps such a graph) still prefills
on the one-sequence step. Real ONNX Runtime sessions on the committed tiny pack."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from pocketcli import PocketTTS
from pocketcli.options import SpeakOptions
from pocketcli.packs.manifest import seal

V1_STEP = Path(__file__).resolve().parents[2] / "fixtures" / "batch-v1" / "flowlm_step_batch.onnx"
TEXT = "One copy of the weights. Two chunks of text to speak here!"


def _pack_with_v1_step(pack_dir: Path, out: Path) -> Path:
    """The tiny pack with the fp32 batched step of packs built on 2026-12-01 (same
    weights file, a graph that takes no embeddings)."""
    shutil.copytree(pack_dir, out)
    (out / ".pockettts-verified.json").unlink(missing_ok=True)
    shutil.copyfile(V1_STEP, out / V1_STEP.name)
    data = json.loads((out / "pack.json").read_text(encoding="utf-8"))
    data["files"][V1_STEP.name] = hashlib.sha256(V1_STEP.read_bytes()).hexdigest()
    (out / "pack.json").write_text(json.dumps(seal(data)), encoding="utf-8")
    return out


@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_a_pack_with_the_batched_prefill_loads_no_one_sequence_flowlm(pack_dir, precision) -> None:
    runtime = PocketTTS.open(runtime="onnx", model_dir=pack_dir, precision=precision).runtime
    loaded = runtime.loaded_graphs
    assert "flowlm_step_batch" in loaded and "flow_head_batch" in loaded
    assert "flowlm_step" not in loaded and "flow_head" not in loaded


def test_the_batched_prefill_equals_the_one_sequence_step(pack_dir, tmp_path, voice_path) -> None:
    """Text prefill and first frame in one call, through the batched graph (one row) and
    through the one-sequence graph of the same pack: the same z, EOS logit and cache."""
    ours = PocketTTS.open(runtime="onnx", model_dir=pack_dir).runtime
    v1 = PocketTTS.open(
        runtime="onnx", model_dir=_pack_with_v1_step(pack_dir, tmp_path / "v1")
    ).runtime
    assert "flowlm_step" in v1.loaded_graphs  # its prefills' graph
    voice = PocketTTS.open(runtime="onnx", model_dir=pack_dir).voices.load(voice_path)
    emb = ours.embed_text(np.arange(3, 40, dtype=np.int64))
    nan = np.full(ours.config.flow_lm.latent_dim, np.nan, np.float32)
    results = []
    for runtime in (ours, v1):
        seq = runtime.start_sequence(voice, 60)
        z, eos = runtime.prefill_then_step(seq, emb, nan)
        results.append((z, eos, seq, seq.length))
    (z_a, eos_a, seq_a, n_a), (z_b, eos_b, seq_b, n_b) = results
    assert n_a == n_b == voice.length + emb.shape[0] + 1
    assert np.abs(z_a - z_b).max() < 1e-5
    assert abs(eos_a - eos_b) < 1e-5
    for ka, kb in zip(seq_a.keys, seq_b.keys, strict=True):
        assert np.abs(ka[:, :, :n_a] - kb[:, :, :n_b]).max() < 1e-5
    assert np.abs(z_a).max() > 0  # not a row of zeros compared with itself


def test_a_pack_built_before_the_batched_prefill_still_speaks_the_same_together(
    pack_dir, tmp_path, voice_path
) -> None:
    tts = PocketTTS.open(runtime="onnx", model_dir=_pack_with_v1_step(pack_dir, tmp_path / "v1"))
    assert "flowlm_step" in tts.runtime.loaded_graphs
    voice = tts.voices.load(voice_path)
    opts = [SpeakOptions(seed=s, output_chain=False, max_tokens=12) for s in (1, 2)]
    alone = [tts.synthesize(TEXT, voice, o) for o in opts]
    together = tts.synthesize_many([TEXT, TEXT[:30]], voice, opts)
    assert np.array_equal(together[0], alone[0])
    again = tts.synthesize_many([TEXT, TEXT], voice, opts)
    assert np.array_equal(again[1], alone[1])
    assert tts._scheduler.stats.batched_calls > 0


def _pack_without_batched_frames(pack_dir: Path, out: Path) -> Path:
    """The tiny pack as packs built before batching are (its batched Mimi decoder kept)."""
    shutil.copytree(pack_dir, out)
    (out / ".pockettts-verified.json").unlink(missing_ok=True)
    data = json.loads((out / "pack.json").read_text(encoding="utf-8"))
    for graphs in data["graphs"].values():
        for name in ("flowlm_step_batch", "flow_head_batch"):
            graphs.pop(name, None)
    (out / "pack.json").write_text(json.dumps(seal(data)), encoding="utf-8")
    return out


def test_each_generation_of_pack_loads_its_own_graphs_and_no_others(
    pack_dir, tmp_path, voice_path
) -> None:
    """The generation table: which sessions each generation of pack holds (each holds a copy
    of its weights), at each precision; the batched Mimi decoder wherever the precision has
    one. Each still speaks."""
    v1 = _pack_with_v1_step(pack_dir, tmp_path / "v1")
    old = _pack_without_batched_frames(pack_dir, tmp_path / "old")
    expected = {
        (pack_dir, "fp32"): {"text_embedding", "flowlm_step_batch", "flow_head_batch",
                             "mimi_decoder_batch"},
        (pack_dir, "int8"): {"text_embedding", "flowlm_step_batch", "flow_head_batch",
                             "mimi_decoder"},
        (v1, "fp32"): {"text_embedding", "flowlm_step", "flowlm_step_batch", "flow_head_batch",
                       "mimi_decoder_batch"},
        (old, "fp32"): {"text_embedding", "flowlm_step", "flow_head", "mimi_decoder_batch"},
        (old, "int8"): {"text_embedding", "flowlm_step", "flow_head", "mimi_decoder"},
    }  # fmt: skip
    for (pack, precision), graphs in expected.items():
        tts = PocketTTS.open(runtime="onnx", model_dir=pack, precision=precision)
        assert set(tts.runtime.loaded_graphs) == graphs, (pack.name, precision)
        assert tts.synthesize("Hi.", tts.voices.load(voice_path), SpeakOptions(seed=1)).size
    assert (
        PocketTTS.open(runtime="onnx", model_dir=old).runtime.batch_unavailable_reason is not None
    )


def test_a_batched_step_is_read_by_its_own_output_names(pack_dir, tmp_path, voice_path) -> None:
    """On a pack that prefills on the one-sequence step, frames go through the batched
    step: its outputs are read by its own names, whatever order its graph lists them in
    (read by the prefill graph's names, a different order gave one output's values for
    another's)."""
    import onnx

    plain = _pack_with_v1_step(pack_dir, tmp_path / "plain")
    shuffled = _pack_with_v1_step(pack_dir, tmp_path / "shuffled")
    model = onnx.load(str(V1_STEP), load_external_data=False)
    outputs = list(model.graph.output)
    del model.graph.output[:]
    model.graph.output.extend(outputs[::-1])
    onnx.save(model, str(shuffled / V1_STEP.name))
    data = json.loads((shuffled / "pack.json").read_text(encoding="utf-8"))
    data["files"][V1_STEP.name] = hashlib.sha256((shuffled / V1_STEP.name).read_bytes()).hexdigest()
    (shuffled / "pack.json").write_text(json.dumps(seal(data)), encoding="utf-8")
    opts = SpeakOptions(seed=3, output_chain=False, max_tokens=12)
    audio = []
    for pack in (plain, shuffled):
        tts = PocketTTS.open(runtime="onnx", model_dir=pack)
        assert tts.runtime.generation.frames == "flowlm_step_batch"
        audio.append(tts.synthesize(TEXT, tts.voices.load(voice_path), opts))
    assert audio[0].size > 0 and np.array_equal(audio[0], audio[1])
