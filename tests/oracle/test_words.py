"""Word timings against pocket-tts-timestamped 1.4.0 on the same random weights (issue 35).

The fork times words from the attention of its config's ``timestamp_heads``. Random
weights spread that attention evenly (every frame stays on the first word), so the selected
heads' query and key projections are scaled up ("sharpened") in the checkpoint both sides
load: their attention then moves over the text with RoPE's rotation and words open, end and
are passed over. For each config, text, voice and noise: the same words, the same words
passed over, every start and end time (to the frame), each frame's voiced/silent call, and
each frame's unit scores within 1e-5.

Both packages are imported in this process: the fork's module is ``pocket_tts_timestamped``
(its own copy of the model code), Kyutai's is ``pocket_tts``; neither imports the other.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import yaml

torch = pytest.importorskip("torch")
pytest.importorskip("pocket_tts")
fork_module = pytest.importorskip("pocket_tts_timestamped")

from pocket_tts_timestamped.timestamps import alignment as fork_alignment  # noqa: E402
from pocket_tts_timestamped.timestamps.records import WordEnd  # noqa: E402

from pocketcli import PocketTTS, SpeakOptions  # noqa: E402
from pocketcli.engine.noise import InjectedNoise  # noqa: E402
from pocketcli.words.align import ChunkAligner  # noqa: E402
from tests.oracle.test_every_config import DEEP, shrunk  # noqa: E402
from tests.support.reference import (  # noqa: E402
    TOKENIZER_MODEL,
    Reference,
    _write_checkpoint,
    build_reference,
    make_config,
    synthetic_voice_audio,
)

pytestmark = [pytest.mark.oracle, pytest.mark.slow]

SHARPEN = 4.0  # the selected heads' q and k rows, times this: attention that moves
TEXTS = (
    "Hello world. This is the pockettts engine, speaking one frame at a time.",
    "Don't stop now: it's twenty-one past nine, isn't it? Yes, the café opens late!",
)
MAX_TOKENS = 12  # several chunks from one short text


def _heads(config: dict, published: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """A published head list on a config shrunk to fewer heads (head numbers modulo)."""
    return [
        (layer, head % config["flow_lm"]["transformer"]["num_heads"]) for layer, head in published
    ]


def _configs() -> dict[str, tuple[dict, list[tuple[int, int]]]]:
    six = shrunk("english_2026-09", keep_depth=True)
    deep = shrunk(DEEP, keep_depth=True)
    narrow = make_config("narrow", str(TOKENIZER_MODEL))  # 6 query heads on 3 KV heads
    return {
        "six": (six, _heads(six, [(3, 8), (2, 0)])),
        "deep": (deep, _heads(deep, [(14, 10), (17, 11), (15, 4)])),
        "grouped": (narrow, [(2, 5), (1, 0), (2, 2)]),
    }


@dataclass
class Setup:
    ref: Reference
    fork: object
    ours: PocketTTS
    root: Path
    heads: list[tuple[int, int]]


def _sharpen(ref: Reference, heads: list[tuple[int, int]]) -> None:
    t = ref.config["flow_lm"]["transformer"]
    n_heads = t["num_heads"]
    kv_heads = t.get("num_kv_heads") or n_heads
    width = t.get("attn_dim") or t["d_model"]
    head_dim = width // n_heads
    group = n_heads // kv_heads
    layers = ref.model.flow_lm.transformer.layers
    with torch.no_grad():
        for layer, head in heads:
            w = layers[layer].self_attn.in_proj.weight
            w[head * head_dim : (head + 1) * head_dim] *= SHARPEN
            kv = head // group
            w[width + kv * head_dim : width + (kv + 1) * head_dim] *= SHARPEN
    _write_checkpoint(ref.model, ref.checkpoint_path)


@pytest.fixture(scope="module", params=list(_configs()))
def setup(request, tmp_path_factory) -> Setup:
    config, heads = _configs()[request.param]
    root = tmp_path_factory.mktemp("words")
    ref = build_reference(config, 3, root / "ref")
    _sharpen(ref, heads)
    listed = [{"layer": layer, "head": head} for layer, head in heads]
    fork_config = yaml.safe_load(ref.config_path.read_text(encoding="utf-8"))
    fork_config["timestamp_heads"] = listed
    (root / "fork.yaml").write_text(yaml.safe_dump(fork_config), encoding="utf-8")
    fork = fork_module.TTSModel.load_model(config=root / "fork.yaml")
    fork.eval()
    ours_config = copy.deepcopy(ref.config)
    ours_config["timestamp_heads"] = listed
    from pocketcli.config import ModelConfig
    from pocketcli.packs.builder import build_pack

    build_pack(
        ref.checkpoint_path, ModelConfig.from_dict(ours_config), TOKENIZER_MODEL, root / "pack"
    )
    return Setup(ref, fork, PocketTTS.open(runtime="onnx", model_dir=root / "pack"), root, heads)


@dataclass
class Timed:
    words: list[tuple[str, int, float, float]]  # (word, index, start, end)
    frames: list[tuple[float, bool]]  # each frame's start and voiced call
    scores: list[np.ndarray]  # each frame's unit scores


def _fork_run(s: Setup, text: str, voice_seed: int, temperature: float, seed: int, eos: float):
    """The fork's words, per-frame records and the noise each frame drew."""
    fork = s.fork
    wav = torch.from_numpy(synthetic_voice_audio(1.5, seed=voice_seed)).reshape(1, -1)
    state = fork.get_state_for_audio_prompt(wav)
    timed = Timed([], [], [])
    noise: list[np.ndarray] = []
    frame_step = [False]
    original = fork_alignment.WordAlignment.process_frame

    def process_frame(self, scores, voiced, frame_start):
        timed.frames.append((frame_start, bool(voiced)))
        timed.scores.append(scores.detach().numpy().astype(np.float32))
        return original(self, scores, voiced, frame_start)

    def on_flow_lm(_module, _args, kwargs):
        frame_step[0] = kwargs["sequence"].shape[1] > 0

    def on_flow_net(_module, args):
        if frame_step[0]:
            noise.append(args[-1].detach().reshape(-1).numpy().astype(np.float32).copy())
            frame_step[0] = False  # only the first flow-net call of a step takes x0

    hooks = [
        fork.flow_lm.register_forward_pre_hook(on_flow_lm, with_kwargs=True),
        fork.flow_lm.flow_net.register_forward_pre_hook(on_flow_net),
    ]
    saved = (fork.temp, fork.eos_threshold, fork.max_decoder_frames_per_call)
    fork.temp, fork.eos_threshold, fork.max_decoder_frames_per_call = temperature, eos, 1
    fork_alignment.WordAlignment.process_frame = process_frame
    try:
        torch.manual_seed(seed)
        for event in fork.generate_audio_with_timestamps_stream(
            state, text, max_tokens=MAX_TOKENS, frames_after_eos=2
        ):
            if isinstance(event, WordEnd):
                timed.words.append((event.word, event.word_index, event.start_time, event.end_time))
    finally:
        fork_alignment.WordAlignment.process_frame = original
        fork.temp, fork.eos_threshold, fork.max_decoder_frames_per_call = saved
        for hook in hooks:
            hook.remove()
    return timed, noise


def _our_run(s: Setup, text: str, voice_seed: int, temperature: float, noise, eos: float):
    ref = s.ref
    state = ref.voice_state_from_audio(synthetic_voice_audio(1.5, seed=voice_seed), 24_000)
    path = s.root / f"voice{voice_seed}.safetensors"
    ref.export_voice(state, path)
    timed = Timed([], [], [])
    original = ChunkAligner.frame

    def frame(self, scores, voiced, at):
        timed.frames.append((at, voiced))
        timed.scores.append(np.asarray(scores, np.float32))
        return original(self, scores, voiced, at)

    opts = SpeakOptions(
        temperature=temperature,
        eos_threshold=eos,
        frames_after_eos=2,
        normalize=False,
        max_tokens=MAX_TOKENS,
        output_chain=False,
        words=True,
    )
    ChunkAligner.frame = frame
    try:
        frames = list(s.ours.stream(text, s.ours.voices.load(path), opts, noise=noise))
    finally:
        ChunkAligner.frame = original
    timed.words = [(w.word, w.index, w.start, w.end) for f in frames for w in f.words]
    return timed


def _compare(theirs: Timed, ours: Timed, text: str) -> None:
    assert len(ours.frames) == len(theirs.frames)
    for k, ((t0, v0), (t1, v1)) in enumerate(zip(ours.frames, theirs.frames, strict=True)):
        assert v0 == v1, f"frame {k}: voiced {v0} against the fork's {v1}"
        assert abs(t0 - t1) < 1e-9, f"frame {k} starts at {t0}, the fork's at {t1}"
        np.testing.assert_allclose(ours.scores[k], theirs.scores[k], atol=1e-5, rtol=0)
    assert [w[:2] for w in ours.words] == [w[:2] for w in theirs.words]  # words, skipped too
    for a, b in zip(ours.words, theirs.words, strict=True):
        assert abs(a[2] - b[2]) < 1e-9 and abs(a[3] - b[3]) < 1e-9, (a, b)
    # The attention moved: many words were timed, and not all on one frame.
    assert len(theirs.words) >= 6
    assert len({w[2] for w in theirs.words}) >= 6


@pytest.mark.parametrize("text", TEXTS, ids=["plain", "punctuated"])
def test_greedy_words_equal_the_fork(setup: Setup, text: str) -> None:
    theirs, _ = _fork_run(setup, text, voice_seed=0, temperature=0.0, seed=0, eos=1e9)
    ours = _our_run(setup, text, voice_seed=0, temperature=0.0, noise=None, eos=1e9)
    _compare(theirs, ours, text)


@pytest.mark.parametrize(("voice_seed", "seed"), [(1, 5), (2, 9)])
def test_sampled_words_equal_the_fork(setup: Setup, voice_seed: int, seed: int) -> None:
    """Temperature 0.7, the fork's noise injected into ours, another voice per case."""
    text = TEXTS[0]
    theirs, noise = _fork_run(setup, text, voice_seed, temperature=0.7, seed=seed, eos=1e9)
    assert np.abs(np.stack(noise)).max() > 0.1
    ours = _our_run(setup, text, voice_seed, 0.7, InjectedNoise(noise), eos=1e9)
    _compare(theirs, ours, text)
