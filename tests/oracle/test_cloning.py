"""Our voice cloning against Kyutai's pocket-tts on the same random weights.

For each small config the oracle builds a random model in the released
checkpoint layout and our torch-free builder makes a pack of it, encoder
included. On real speech (the alba source recording and LibriSpeech clips)
resampled to 24 kHz by pocket-tts's own ``convert_audio``, our path audio ->
encoder -> projection -> prefill must give pocket-tts's
``get_state_for_audio_prompt`` KV cache, and the audio spoken with it must
match, to 1e-4. Recordings at 44.1, 48 and 16 kHz go through both sides'
own file reading and resampling (ours is ``resample_poly`` in numpy) and
must match as well. Voice files must cross both ways.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from tests.support.paths import DATA

torch = pytest.importorskip("torch")
pytest.importorskip("pocket_tts")

from pocket_tts.data.audio_utils import convert_audio  # noqa: E402
from pocket_tts.data.audio_utils import end_on_pause as torch_end_on_pause  # noqa: E402

from pocketcli import PocketTTS  # noqa: E402
from pocketcli.options import SpeakOptions  # noqa: E402
from pocketcli.voices.prompt import _torch_linspace, end_on_pause  # noqa: E402
from pocketcli.voices.state import VoiceState  # noqa: E402
from tests.support.reference import (  # noqa: E402
    TOKENIZER_MODEL,
    Reference,
    build_reference,
    make_config,
)

pytestmark = pytest.mark.oracle

SPEECH = DATA / "speech"
CLIPS = {
    "alba": SPEECH / "kyutai-tts-voices" / "alba-mackenna_casual.wav",
    "libri-clean": SPEECH / "librispeech" / "librispeech_test_clean_6930-75918-0000.wav",
    "libri-other": SPEECH / "librispeech" / "librispeech_test_other_7902-96591-0001.wav",
}
TEXT = "Hello world, this is a cloned voice."
TOLERANCE = 1e-4


def _at_24k(path: Path) -> np.ndarray:
    """The clip as pocket-tts resamples it: the same float array goes to both sides."""
    samples, rate = sf.read(path, dtype="float32")
    return convert_audio(torch.from_numpy(samples)[None], rate, 24_000, 1)[0].numpy()


@dataclass
class Setup:
    ref: Reference
    tts: PocketTTS
    root: Path


@pytest.fixture(scope="module", params=["tiny", "narrow"])
def setup(request, tmp_path_factory) -> Setup:
    root = tmp_path_factory.mktemp(f"clone-{request.param}")
    ref = build_reference(make_config(request.param, str(TOKENIZER_MODEL)), 23, root / "ref")
    ref.build_pack(root / "pack")
    return Setup(ref, PocketTTS.open(runtime="onnx", model_dir=root / "pack"), root)


@pytest.fixture(scope="module")
def prompts() -> dict[str, np.ndarray]:
    return {name: _at_24k(path) for name, path in CLIPS.items()}


def _compare_states(ours: VoiceState, theirs: dict) -> None:
    assert ours.num_layers == len(theirs)
    for i in range(ours.num_layers):
        layer = theirs[f"transformer.layers.{i}.self_attn"]
        offset = int(layer["offset"].reshape(-1)[0])
        assert offset == ours.length
        cache = layer["cache"][:, 0, :offset].numpy()
        assert np.abs(cache[0] - ours.keys[i]).max() <= TOLERANCE
        assert np.abs(cache[1] - ours.values[i]).max() <= TOLERANCE


def _speak_both(setup: Setup, ours: VoiceState, theirs: dict) -> tuple[np.ndarray, np.ndarray]:
    run = setup.ref.generate(TEXT, theirs, temperature=0.0, seed=0, eos_threshold=1e9)
    audio = setup.tts.synthesize(
        TEXT, ours, options=SpeakOptions(temperature=0.0, eos_threshold=1e9, output_chain=False)
    )
    return audio, run.audio


@pytest.mark.parametrize("clip", list(CLIPS))
def test_cloning_matches_the_oracle_on_speech(setup, prompts, clip) -> None:
    audio_24k = prompts[clip]
    theirs = setup.ref.voice_state_from_audio(audio_24k, 24_000)
    ours = setup.tts.voices.clone(audio_24k, 24_000)
    assert ours.length >= 26  # >= 2 s of speech plus bos_before_voice
    _compare_states(ours, theirs)
    audio, expected = _speak_both(setup, ours, theirs)
    assert audio.shape == expected.shape
    assert np.abs(audio - expected).max() <= TOLERANCE
    assert np.abs(expected).max() > 0.01


def test_voice_files_cross_both_ways(setup, prompts) -> None:
    ours = setup.tts.voices.clone(prompts["libri-clean"], 24_000)
    theirs = setup.ref.voice_state_from_audio(prompts["libri-clean"], 24_000)

    # Ours -> pocket-tts: its own loader (get_state_for_audio_prompt on a .safetensors path).
    mine = setup.root / "ours.safetensors"
    setup.tts.voices.save(ours, mine)
    imported = setup.ref.model.get_state_for_audio_prompt(mine)
    from_ours = setup.ref.generate(TEXT, imported, temperature=0.0, seed=0, eos_threshold=1e9)
    from_theirs = setup.ref.generate(TEXT, theirs, temperature=0.0, seed=0, eos_threshold=1e9)
    assert np.abs(from_ours.audio - from_theirs.audio).max() <= TOLERANCE

    # pocket-tts -> ours: its export_model_state file.
    exported = setup.root / "theirs.safetensors"
    setup.ref.export_voice(theirs, exported)
    loaded = setup.tts.voices.load(exported)
    _compare_states(loaded, theirs)
    audio = setup.tts.synthesize(
        TEXT, loaded, options=SpeakOptions(temperature=0.0, eos_threshold=1e9, output_chain=False)
    )
    assert np.abs(audio - from_theirs.audio).max() <= TOLERANCE


def test_30_second_cut_and_file_reading_match_export_voice(setup, prompts, tmp_path) -> None:
    """pocket-tts's export-voice path (truncate=True) on a 16-bit WAV of 35 s."""
    if setup.ref.config["flow_lm"]["transformer"]["num_layers"] != 2:
        pytest.skip("one config is enough for the long prompt")
    long = np.concatenate(
        [
            prompts["alba"],
            prompts["libri-clean"],
            prompts["alba"],
            prompts["libri-other"],
            prompts["alba"],
        ]
    )[: 35 * 24_000]
    path = tmp_path / "long.wav"
    sf.write(path, long, 24_000, subtype="PCM_16")
    theirs = setup.ref.model.get_state_for_audio_prompt(path, truncate=True)
    notes: list[str] = []
    ours = setup.tts.voices.clone(path, on_warning=notes.append)
    assert len(notes) == 1 and "first 30 s" in notes[0]
    assert ours.length > 370  # 30 s = 375 frames (+ pause, + bos)
    _compare_states(ours, theirs)


@pytest.fixture(scope="module")
def recordings(tmp_path_factory) -> dict[int, Path]:
    """16-bit WAV recordings at 48 kHz (alba's source), 44.1 kHz and 16 kHz (LibriSpeech)."""
    root = tmp_path_factory.mktemp("rates")
    samples, rate = sf.read(CLIPS["alba"], dtype="float32")
    assert rate == 48_000
    # A 44.1 kHz recording of the same speech (how it was made does not matter: it is input).
    at_44k1 = convert_audio(torch.from_numpy(samples)[None], 48_000, 44_100, 1)[0].numpy()
    sf.write(root / "alba-44k1.wav", at_44k1, 44_100, subtype="PCM_16")
    assert sf.info(CLIPS["libri-clean"]).samplerate == 16_000
    return {48_000: CLIPS["alba"], 44_100: root / "alba-44k1.wav", 16_000: CLIPS["libri-clean"]}


@pytest.mark.parametrize("rate", [44_100, 48_000, 16_000])
def test_cloning_from_other_rates_matches_the_oracle(setup, recordings, rate) -> None:
    """Each side reads and resamples the file itself (pocket-tts: ``resample_poly``)."""
    path = recordings[rate]
    assert sf.info(path).samplerate == rate
    theirs = setup.ref.model.get_state_for_audio_prompt(path, truncate=True)
    ours = setup.tts.voices.clone(path)
    _compare_states(ours, theirs)
    audio, expected = _speak_both(setup, ours, theirs)
    assert audio.shape == expected.shape
    assert np.abs(audio - expected).max() <= TOLERANCE
    assert np.abs(expected).max() > 0.01


def test_end_on_pause_is_bit_exact(prompts) -> None:
    for n in range(1, 1001):
        assert np.array_equal(_torch_linspace(1.0, 0.0, n), torch.linspace(1, 0, n).numpy()), n
    rng = np.random.default_rng(5)
    signals = list(prompts.values()) + [
        (rng.standard_normal(rng.integers(500, 50_000)) * rng.random()).astype(np.float32)
        for _ in range(10)
    ]
    for audio in signals:
        expected = torch_end_on_pause(torch.from_numpy(audio)[None], 24_000)[0].numpy()
        ours, _ = end_on_pause(audio, 24_000)
        assert np.array_equal(ours, expected)
