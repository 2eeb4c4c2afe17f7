"""The engine against pocket-tts with ``frames_after_eos=0`` and with the defaults a user gets.

Every other oracle comparison passes ``max_tokens`` and ``frames_after_eos`` explicitly, so
a default that drifts from pocket-tts's (``max_tokens`` 50, the frames-after-EOS guess) or
an EOS tail one frame long at 0 went unseen. Random weights fire EOS at frame 6, the
earliest allowed, so with 0 every chunk is exactly 6 frames.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("pocket_tts")

from pocket_tts.models.tts_model import TTSModel  # noqa: E402

from pocketcli import PocketTTS, SpeakOptions  # noqa: E402
from pocketcli.engine.chunk import ChunkTrace, Frame  # noqa: E402
from pocketcli.engine.noise import NoiseSource  # noqa: E402
from tests.oracle.test_engine import MAX_TOKENS, _compare  # noqa: E402
from tests.oracle.test_engine import TEXT as SHORT_CHUNKS_TEXT  # noqa: E402
from tests.support.reference import (  # noqa: E402
    TOKENIZER_MODEL,
    Reference,
    build_reference,
    make_config,
    synthetic_voice_audio,
)

pytestmark = pytest.mark.oracle

# 27 + 8 + 10 + 7 tokens, then 35 and 31: chunks of 45, 42 and 31 tokens at max_tokens 50;
# 40 or 55 would cut it elsewhere.
STORY = (
    "The old lighthouse keeper climbed the winding stairs every evening to light the lamp "
    "for passing ships. Then one morning he was gone. His boots stood by the door. Nobody "
    "ever saw him again. Nobody in the village could remember a single night when the light "
    "had failed, not even during the great storm of the winter before last. She wrote "
    "letters to everyone she knew, asking about the weather, the harvest and the price of "
    "bread in town."
)
POCKET_TTS_MAX_TOKENS = inspect.signature(TTSModel.generate_audio).parameters["max_tokens"].default


@dataclass
class Setup:
    ref: Reference
    voice_state: dict
    ours: PocketTTS
    voice_path: Path


@pytest.fixture(scope="module")
def setup(tmp_path_factory) -> Setup:
    root = tmp_path_factory.mktemp("defaults")
    ref = build_reference(make_config("tiny", str(TOKENIZER_MODEL)), 11, root / "ref")
    ref.build_pack(root / "pack")
    voice_state = ref.voice_state_from_audio(synthetic_voice_audio(seconds=2.0), 24_000)
    ref.export_voice(voice_state, root / "voice.safetensors")
    return Setup(
        ref,
        voice_state,
        PocketTTS.open(runtime="onnx", model_dir=root / "pack"),
        root / "voice.safetensors",
    )


def _ours(
    setup: Setup, text: str, noise: NoiseSource | None = None, **options
) -> tuple[list[Frame], list[ChunkTrace]]:
    traces: list[ChunkTrace] = []
    voice = setup.ours.voices.load(setup.voice_path)
    frames = list(
        setup.ours.stream(
            text,
            voice,
            SpeakOptions(normalize=False, output_chain=False, **options),
            noise=noise,
            on_chunk=traces.append,
        )
    )
    return frames, traces


def test_frames_after_eos_zero_stops_at_the_eos_frame(setup: Setup) -> None:
    run = setup.ref.generate(
        SHORT_CHUNKS_TEXT,
        setup.voice_state,
        temperature=0.0,
        seed=0,
        max_tokens=MAX_TOKENS,
        frames_after_eos=0,
    )
    assert [c.emitted_frames for c in run.chunks] == [6] * len(run.chunks)  # EOS at frame 6
    frames, traces = _ours(
        setup, SHORT_CHUNKS_TEXT, temperature=0.0, max_tokens=MAX_TOKENS, frames_after_eos=0
    )
    _compare(run, frames, traces)
    assert all(t.finished_on_eos for t in traces)


def test_the_defaults_are_pocket_tts_s(setup: Setup) -> None:
    """No max_tokens and no frames_after_eos on either side: chunking and tails must agree."""
    assert SpeakOptions().max_tokens == POCKET_TTS_MAX_TOKENS
    run = setup.ref.generate(
        STORY, setup.voice_state, temperature=0.0, seed=0, max_tokens=POCKET_TTS_MAX_TOKENS
    )
    assert [len(c.token_ids) for c in run.chunks] == [45, 42, 31]
    frames, traces = _ours(setup, STORY, temperature=0.0)
    _compare(run, frames, traces)
    # The tail is pocket-tts's guess (1 frame for 5 words or more, plus 2) after EOS at 6.
    assert [t.frames for t in traces] == [c.emitted_frames for c in run.chunks] == [9, 9, 9]
