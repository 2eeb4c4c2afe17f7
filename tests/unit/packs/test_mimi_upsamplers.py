"""The Mimi decoder's upsamplers carry their last input row (issue 34), and the form before
(their overlap) still works: the two give the same audio over many frames and any split
into calls, one stream alone and in a batch, and a pack built before is read as it was.

Real graphs from the tiny fixture's checkpoint on real ONNX Runtime sessions; the form
before is the builder's ``overlap_states`` (the kevinahm export's, byte for byte the graph
packs were built with until 2026-12-03).
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from pocketcli import PocketTTS
from pocketcli.config import ModelConfig
from pocketcli.options import SpeakOptions
from pocketcli.packs.checkpoint import read_checkpoint
from pocketcli.packs.graph_files import save_graph
from pocketcli.packs.manifest import MIMI_BATCH_GRAPH, PackManifest
from pocketcli.packs.mimi_graphs import build_mimi_decoder
from pocketcli.packs.quantize import quantise_int8

# 40 frames: 640 transformer positions, past its 250-position window, and many calls.
FRAMES = 40


@pytest.fixture(scope="module")
def built(fixture_dir, tmp_path_factory) -> dict[str, object]:
    """Both forms of the tiny decoder (fp32, int8, batched), saved under a pack's names."""
    cfg = ModelConfig.from_yaml(fixture_dir / "config.yaml").mimi
    w = read_checkpoint(fixture_dir / "model.safetensors")
    out = tmp_path_factory.mktemp("mimi")
    built: dict[str, object] = {}
    for form, overlap in (("rows", False), ("overlap", True)):
        (out / form).mkdir()
        model, built[f"{form}.states"] = build_mimi_decoder(w, cfg, overlap_states=overlap)
        save_graph(model, out / form / "mimi_decoder.onnx")
        quantise_int8(out / form / "mimi_decoder.onnx", out / form / "mimi_decoder.int8.onnx")
        model, _ = build_mimi_decoder(w, cfg, batched=True, overlap_states=overlap)
        save_graph(model, out / form / f"{MIMI_BATCH_GRAPH}.onnx")
        built[form] = out / form
    return built


def _session(path: Path) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _decode(session: ort.InferenceSession, latents: np.ndarray, splits: list[int]) -> np.ndarray:
    """Streams ``latents [B, K, D]`` through ``session`` in calls of ``splits`` frames,
    each call fed the states the one before returned (zeros at first)."""
    feeds = {
        i.name: np.zeros(
            [latents.shape[0] if isinstance(d, str) else d for d in i.shape],
            np.int64 if "int64" in i.type else np.float32,
        )
        for i in session.get_inputs()
        if i.name != "latents"
    }
    outputs = [o.name for o in session.get_outputs()]
    audio, at = [], 0
    for n in splits:
        got = session.run(None, {"latents": latents[:, at : at + n], **feeds})
        for name, value in zip(outputs, got, strict=True):
            if name == "audio":
                audio.append(value)
            else:
                feeds["state." + name.removeprefix("state_out.")] = value
        at += n
    assert at == latents.shape[1]
    return np.concatenate(audio, axis=1)


def _latents(rows: int, seed: int = 3) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((rows, FRAMES, 32)).astype(np.float32)


def _splits(*sizes: int) -> list[int]:
    """Calls of ``sizes`` frames in turn until FRAMES are covered."""
    out: list[int] = []
    while sum(out) < FRAMES:
        for n in sizes:
            out.append(min(n, FRAMES - sum(out)))
    return [n for n in out if n]


def test_new_upsamplers_stream_the_audio_of_the_form_before(built) -> None:
    """Any split of 40 frames into calls gives the audio the overlap form gives decoding
    them all at once (fp32, within float rounding): a state carried wrongly between calls
    (a wrong row kept, the kernel halves swapped) shows at every call boundary."""
    old = _decode(_session(built["overlap"] / "mimi_decoder.onnx"), _latents(1), [FRAMES])
    new = _session(built["rows"] / "mimi_decoder.onnx")
    peak = float(np.abs(old).max())
    assert peak > 0
    for splits in ([FRAMES], [1] * FRAMES, _splits(2), _splits(3, 1, 5)):
        got = _decode(new, _latents(1), splits)
        assert got.shape == old.shape
        assert np.abs(got - old).max() <= 1e-5 * max(1.0, peak), splits


def test_int8_upsamplers_keep_the_quality_of_the_form_before(built) -> None:
    """int8 of the new form is as close to fp32 as int8 of the form before (SNR within
    1 dB), over two-frame calls as the runtime makes them."""
    lat, calls = _latents(1, seed=5), _splits(2)
    reference = _decode(_session(built["rows"] / "mimi_decoder.onnx"), lat, calls)

    def snr(x: np.ndarray) -> float:
        return float(10 * np.log10((reference**2).sum() / ((reference - x) ** 2).sum()))

    old = snr(_decode(_session(built["overlap"] / "mimi_decoder.int8.onnx"), lat, calls))
    new = snr(_decode(_session(built["rows"] / "mimi_decoder.int8.onnx"), lat, calls))
    assert old > 20
    assert new >= old - 1.0, (new, old)


def test_batched_rows_are_each_stream_alone(built) -> None:
    """Three streams in one batched call give each stream's audio alone, byte for byte,
    and the one-stream graph's within rounding: no row's state reaches another's."""
    batch = _session(built["rows"] / f"{MIMI_BATCH_GRAPH}.onnx")
    lat = _latents(3, seed=9)
    together = _decode(batch, lat, _splits(2, 3))
    single = _session(built["rows"] / "mimi_decoder.onnx")
    for row in range(3):
        alone = _decode(batch, lat[row : row + 1], _splits(2, 3))
        assert np.array_equal(together[row], alone[0]), row
        one = _decode(single, lat[row : row + 1], _splits(1, 4))
        assert np.abs(one[0] - alone[0]).max() <= 1e-5, row


def test_pack_built_before_still_speaks_the_same(built, pack_dir, tmp_path, voice_path) -> None:
    """A pack whose decoders carry the overlap (built before 2026-12-03: its manifest lists
    those states) loads, and speaks what a pack built now does: fp32 within 1e-5, int8
    within the int8 error; one-stream and batched decoders alike."""
    old_pack = tmp_path / "pack"
    shutil.copytree(pack_dir, old_pack)
    manifest = PackManifest.read(old_pack)
    for file in built["overlap"].iterdir():
        shutil.copyfile(file, old_pack / file.name)
    old_states = tuple(built["overlap.states"])
    assert old_states != manifest.mimi_states
    replace(manifest, mimi_states=old_states).write(old_pack)
    (old_pack / ".pockettts-verified.json").unlink(missing_ok=True)

    options = SpeakOptions(temperature=0.0, output_chain=False)
    for precision, tolerance in (("fp32", 1e-5), ("int8", 0.05)):
        now = PocketTTS.open(runtime="onnx", model_dir=pack_dir, precision=precision)
        before = PocketTTS.open(runtime="onnx", model_dir=old_pack, precision=precision)
        voice = now.voices.load(voice_path)
        a = now.synthesize("Built before, read now.", voice, options=options)
        b = before.synthesize("Built before, read now.", voice, options=options)
        assert a.shape == b.shape and a.size > 0
        assert np.abs(a - b).max() <= tolerance, precision
