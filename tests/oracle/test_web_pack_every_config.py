"""The browser pack from configs unlike the tiny model's: the 2026-10 families (GQA,
attention width, z projection, low-rank text tables, drifting and pointwise flow heads),
shrunk as in test_every_config, export and speak as our fp32 pack of the same checkpoint.

Greedy, EOS out of play, test_every_config's text: english_2026-04 56.4 dB, english_2026-01
62.2, english_drifting_26-09 46.9, english_18m_2026-10 49.2, english_7m_2026-10 50.4,
english_2m_2026-10 42.3 (all six passed once). The two with the most structure run here at
temperature 0.7 (seed 3: the same noise for both), so the noise's path through the flow
head counts too: 49.0 and 44.4 dB (the pointwise head without its noise term: 25.6).
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("pocket_tts")

from pocketcli import PocketTTS  # noqa: E402
from pocketcli.config import ModelConfig  # noqa: E402
from pocketcli.options import SpeakOptions
from pocketcli.packs.web import export_web_pack  # noqa: E402
from tests.oracle.test_every_config import TEXT, shrunk  # noqa: E402
from tests.support.reference import TOKENIZER_MODEL, build_reference, synthetic_voice_audio  # noqa: E402
from tests.support.snr import snr_db  # noqa: E402

pytestmark = pytest.mark.oracle
MIN_SNR_DB = 35.0  # the tiny model's bound (unit/packs/test_web_pack)


@pytest.mark.parametrize("name", ["english_7m_2026-10", "english_2m_2026-10"])
def test_config_exports_a_browser_pack_that_speaks_as_our_pack(name: str, tmp_path: Path) -> None:
    config = shrunk(name)
    ref = build_reference(config, 5, tmp_path / "ref")
    clip = synthetic_voice_audio(seconds=1.5)
    web = export_web_pack(
        tmp_path / "ref" / "model.safetensors",
        ModelConfig.from_dict(config),
        TOKENIZER_MODEL,
        clip,
        tmp_path / "web",
    )
    pack = ref.build_pack(tmp_path / "pack")
    ref.export_voice(ref.voice_state_from_audio(clip, 24_000), tmp_path / "voice.safetensors")
    audio = []
    for folder in (pack, web):
        tts = PocketTTS.open(runtime="onnx", model_dir=folder)
        voice = tts.voices.load(tmp_path / "voice.safetensors")
        audio.append(
            tts.synthesize(
                TEXT,
                voice,
                options=SpeakOptions(
                    temperature=0.7, seed=3, eos_threshold=1e9, normalize=False, output_chain=False
                ),
            )  # fmt: skip
        )
    ours, theirs = audio
    assert theirs.shape == ours.shape
    assert snr_db(ours, theirs) >= MIN_SNR_DB
