"""The library does what ``pockettts tts`` does: open a model, name a voice, same samples."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import soundfile as sf

from pocketcli import PocketTTS
from pocketcli.audio.postprocess import OutputChain, peak_normalize
from pocketcli.errors import OptionConflict, RuntimeUnavailable, UnknownNameError
from pocketcli.options import SpeakOptions
from pocketcli.packs.manifest import seal
from tests.support.cli import run
from tests.support.fakehub import TINY_CONFIG
from tests.unit.store.test_download import hub  # noqa: F401 - the fake Hub fixture, in-process

TEXT = "The library and the command agree. Sample for sample."


def _cli_wav(tmp_path, *args: str) -> np.ndarray:
    out = tmp_path / "cli.wav"
    r = run("tts", TEXT, "-o", str(out), "-q", *args)
    assert r.returncode == 0, r.stderr
    audio, rate = sf.read(out, dtype="int16")
    assert rate == 24_000
    return audio


def _as_int16(audio: np.ndarray) -> np.ndarray:
    """The WAV writer's conversion (clip, scale, truncate), for comparing samples."""
    return (np.clip(audio, -1.0, 1.0) * 32767).astype(np.int16)


@pytest.mark.parametrize("flags", [[], ["--no-deess"], ["--temperature", "0.7"]])
def test_synthesize_equals_pockettts_tts_for_the_same_seed(
    pack_dir, voice_path, tmp_path, flags
) -> None:
    cli = _cli_wav(
        tmp_path,
        "--model-dir",
        str(pack_dir),
        "--voice-file",
        str(voice_path),
        "--seed",
        "5",
        *flags,
    )
    tts = PocketTTS.open(model_dir=pack_dir)
    options = SpeakOptions(
        seed=5,
        temperature=0.7 if "--temperature" in flags else None,
        output_chain="--no-deess" not in flags,
        peak_normalize=True,
    )
    ours = tts.synthesize(TEXT, tts.voices.get(voice_path), options)
    assert ours.shape == cli.shape
    assert np.abs(_as_int16(ours).astype(np.int32) - cli).max() <= 1
    assert np.abs(ours).max() == pytest.approx(1.0, abs=1e-6)


def test_default_options_are_the_cli_defaults(pack_dir, voice_path, tmp_path) -> None:
    """No options at all in Python = no flags at all on the command line (seed aside)."""
    cli = _cli_wav(
        tmp_path, "--model-dir", str(pack_dir), "--voice-file", str(voice_path), "--seed", "9"
    )
    tts = PocketTTS.open(runtime="onnx", model_dir=pack_dir)
    ours = tts.synthesize(TEXT, tts.voices.load(voice_path), options=SpeakOptions(seed=9))
    assert np.abs(_as_int16(ours).astype(np.int32) - cli).max() <= 1


def test_stream_is_synthesize_before_peak_normalisation(pack_dir, voice_path) -> None:
    tts = PocketTTS.open(model_dir=pack_dir)
    voice = tts.voices.get(str(voice_path))
    frames = [f.audio for f in tts.stream(TEXT, voice, options=SpeakOptions(seed=3))]
    whole = tts.synthesize(TEXT, voice, options=SpeakOptions(seed=3))
    raw = tts.synthesize(TEXT, voice, options=SpeakOptions(seed=3, output_chain=False))
    streamed = np.concatenate(frames)
    assert np.abs(streamed - OutputChain(tts.sample_rate).process(raw)).max() < 1e-6
    assert np.abs(peak_normalize(streamed) - whole).max() < 1e-6
    assert np.abs(streamed - raw).max() > 1e-3  # the filters are on by default


def _pack_with_language(pack_dir, tmp_path, language: str):
    copy = tmp_path / "pack"
    shutil.copytree(pack_dir, copy)
    manifest = json.loads((copy / "pack.json").read_text(encoding="utf-8"))
    manifest["source"]["language"] = language
    (copy / "pack.json").write_text(json.dumps(seal(manifest)), encoding="utf-8")
    return copy


def test_voice_by_name_is_fetched_for_the_packs_language(hub, pack_dir, voice_path, tmp_path):  # noqa: F811
    tts = PocketTTS.open(model_dir=_pack_with_language(pack_dir, tmp_path, "english"))
    assert tts.language == "english" and tts.voices.default_name == "alba"
    alba = tts.voices.get("alba")
    assert any("alba.safetensors" in r.path for r in hub.requests())
    fixture = tts.voices.load(voice_path)
    assert all(np.array_equal(a, b) for a, b in zip(alba.keys, fixture.keys, strict=True))
    # FluidAudio's name for the default voice, any case; and the default voice itself.
    assert np.array_equal(tts.voices.get("AF_Heart").keys[0], alba.keys[0])
    assert tts.voices.default() is not None
    with pytest.raises(UnknownNameError, match="alba"):
        tts.voices.get("nobody")


def test_a_pack_without_a_language_has_no_default_voice(pack_dir) -> None:
    tts = PocketTTS.open(model_dir=pack_dir)
    assert tts.voices.default_name is None and tts.voices.default() is None
    with pytest.raises(Exception, match="does not say its language"):
        tts.voices.get("alba")


def test_open_builds_a_config_from_the_hub_as_the_cli_does(hub, tmp_path) -> None:  # noqa: F811
    tts = PocketTTS.open(config=TINY_CONFIG, precision="INT8")
    assert tts._request.precision == "int8" and tts._request.runtime == "onnx"
    assert tts._pack_dir is not None and (tts._pack_dir / "pack.json").is_file()
    assert tts.synthesize("Built in one line.", None, options=SpeakOptions(seed=1)).size > 0
    hub.clear_log()
    again = PocketTTS.open(config=TINY_CONFIG, precision="int8", offline=True)
    assert again._pack_dir == tts._pack_dir and hub.requests() == []


@pytest.mark.parametrize(
    "kwargs, error, fragment",
    [
        ({"language": "klingon"}, UnknownNameError, "english"),
        ({"language": "spanish", "model_dir": "x"}, OptionConflict, "^model_dir already"),
        ({"language": "spanish", "config": "x.yaml"}, OptionConflict, "^config and language"),
        ({"runtime": "tpu"}, UnknownNameError, "auto, onnx, coreml"),
        ({"precision": "fp64"}, UnknownNameError, "fp32, int8, int4"),
        ({"placement": "npu"}, UnknownNameError, "gpu, ane"),
        ({"runtime": "coreml"}, RuntimeUnavailable, "macOS"),
        ({"runtime": "coreml", "config": "x.yaml"}, OptionConflict, "by language$"),
    ],
)
def test_open_checks_every_argument_before_any_download(kwargs, error, fragment) -> None:
    """Every bad argument is refused before any download, in the caller's words:
    the errors name ``open``'s arguments, never a command-line flag."""
    if kwargs.get("runtime") == "coreml" and "config" not in kwargs:
        from pocketcli.runtimes.coreml import coreml_unavailable_reason

        if coreml_unavailable_reason() is None:
            pytest.skip("Core ML runs here")
    with pytest.raises(error, match=fragment) as caught:
        PocketTTS.open(offline=True, **kwargs)
    assert "--" not in str(caught.value)


def test_open_is_case_insensitive(pack_dir) -> None:
    tts = PocketTTS.open(model_dir=pack_dir, runtime="ONNX", precision="Int8")
    assert tts.runtime.precision == "int8"


@pytest.mark.parametrize(
    "options, peak",
    [
        (SpeakOptions(), True),
        (SpeakOptions(output_chain=False), False),
        (SpeakOptions(output_chain=False, peak_normalize=True), True),  # FluidAudio's --no-deess
        (SpeakOptions(peak_normalize=False), False),
    ],
)
def test_peak_normalisation_follows_the_chain_unless_set(options, peak) -> None:
    assert options.peak_normalized is peak


@pytest.mark.parametrize(
    "field, value",
    [
        ("output_chain", "yes"),
        ("peak_normalize", 1),
        ("temperature", -0.1),
        ("seed", -1),
        ("max_tokens", 0),
    ],
)
def test_speak_options_refuse_bad_values(field, value) -> None:
    from pocketcli.options import OptionsError

    with pytest.raises(OptionsError, match=field):
        SpeakOptions(**{field: value})
    with pytest.raises(TypeError, match="unknown speak option"):
        SpeakOptions().with_(pace=1.0)


def test_synthesize_and_stream_take_a_voice_by_name_or_path(pack_dir, voice_path) -> None:
    """What tts.voices.get() takes works where a voice is expected (a newcomer's first try)."""
    tts = PocketTTS.open(model_dir=pack_dir)
    expected = tts.synthesize("Hi.", tts.voices.get(voice_path), options=SpeakOptions(seed=2))
    for given in (voice_path, str(voice_path)):
        assert np.array_equal(tts.synthesize("Hi.", given, options=SpeakOptions(seed=2)), expected)
        streamed = np.concatenate(
            [f.audio for f in tts.stream("Hi.", given, options=SpeakOptions(seed=2))]
        )
        assert np.array_equal(peak_normalize(streamed), expected)
    with pytest.raises(TypeError, match="voice must be"):
        tts.synthesize("Hi.", 3)  # type: ignore[arg-type]
