"""Three streams spoken together by the scheduler, each against Kyutai's pocket-tts alone.

Different lengths (EOS on, then a full frame budget), different voices and
different seeds (the oracle's noise injected), on the same random weights:
each stream's latents, EOS logits and audio must be pocket-tts's, as a stream
alone is (tests/oracle/test_engine.py).
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("pocket_tts")

from pocketcli import PocketTTS  # noqa: E402
from pocketcli.engine.chunk import ChunkTrace  # noqa: E402
from pocketcli.engine.noise import InjectedNoise  # noqa: E402
from pocketcli.options import SpeakOptions
from tests.oracle.test_engine import compare_with_oracle  # noqa: E402
from tests.support.reference import (  # noqa: E402
    TOKENIZER_MODEL,
    build_reference,
    make_config,
    synthetic_voice_audio,
)

pytestmark = pytest.mark.oracle

LINES = (  # text, voice, seed, eos_threshold
    ("Hello world. Three streams speak at once, each in its own voice!", 0, 5, None),
    ("A short one.", 1, 6, None),
    ("This line runs its whole budget.", 1, 7, 1e9),
)


def test_three_streams_together_match_pocket_tts(tmp_path) -> None:
    ref = build_reference(make_config("tiny", str(TOKENIZER_MODEL)), 11, tmp_path / "ref")
    ref.build_pack(tmp_path / "pack")
    tts = PocketTTS.open(runtime="onnx", model_dir=tmp_path / "pack")
    voices = []
    for i in range(2):
        state = ref.voice_state_from_audio(synthetic_voice_audio(seconds=2.0, seed=i), 24_000)
        ref.export_voice(state, tmp_path / f"voice{i}.safetensors")
        voices.append((state, tts.voices.load(tmp_path / f"voice{i}.safetensors")))

    runs = [
        ref.generate(
            text,
            voices[voice][0],
            temperature=0.7,
            seed=seed,
            max_tokens=12,
            eos_threshold=eos,
            frames_after_eos=2,
        )
        for text, voice, seed, eos in LINES
    ]
    streams, traces = [], []
    for (text, voice, _, eos), run in zip(LINES, runs, strict=True):
        noise = [row for c in run.chunks for row in c.frame_noise[: c.emitted_frames]]
        mine: list[ChunkTrace] = []
        streams.append(
            tts.stream(
                text,
                voices[voice][1],
                options=SpeakOptions(
                    max_tokens=12,
                    eos_threshold=eos,
                    frames_after_eos=2,
                    normalize=False,
                    output_chain=False,
                ),
                noise=InjectedNoise(noise),
                on_chunk=mine.append,
            )
        )
        traces.append(mine)
    frames = [list(s) for s in streams]

    assert len({r.audio.size for r in runs}) == 3
    assert tts._scheduler.stats.batch_sizes[3] > 0 and tts._scheduler.stats.batched_calls > 0
    for run, got, trace in zip(runs, frames, traces, strict=True):
        compare_with_oracle(run, got, trace)
