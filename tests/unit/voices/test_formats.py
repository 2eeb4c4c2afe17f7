"""Voice files of every published format, recognised from their content (torch-free).

Kyutai's real 2026-01 voices (tests/data/voices-en-2026-01) are 1024 wide: they
are recognised and refused with a width line on the tiny model. Equality with
the oracle of each format at the tiny width is in tests/oracle/test_kyutai_files.py.
"""

from __future__ import annotations

import hashlib
import json
import struct
from functools import partial

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from safetensors.numpy import load_file, save_file

from pocketcli import PocketTTS
from pocketcli.voices.formats import identify
from pocketcli.voices.prompt import VoiceWarning
from pocketcli.voices.state import VoiceError
from tests.support import cli, tensorfiles
from tests.support.tensorfiles import REAL_VOICES

WIDTH = 64  # the tiny fixture model's d_model


@pytest.fixture(scope="module")
def tts(pack_dir) -> PocketTTS:
    return PocketTTS.open(runtime="onnx", model_dir=pack_dir)


def one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text and "Traceback" not in text
    return text


def cond(frames: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((frames, WIDTH)).astype(np.float32)


# --------------------------------------------------------------------------- real files


@pytest.mark.parametrize("name, frames", [("cosette", 125), ("jean", 125), ("fantine", 132)])
def test_kyutai_2026_01_voices_are_recognised(name, frames) -> None:
    path = REAL_VOICES / f"{name}.safetensors"
    assert (
        hashlib.sha256(path.read_bytes()).hexdigest()
        == (tensorfiles.KYUTAI_AUDIO_PROMPT_SHA256[name])
    )
    vf = identify(path)
    assert vf.format == "kyutai-audio-prompt" and vf.ignored == ()
    (entry,) = vf.voices
    assert (entry.kind, entry.frames, entry.width, entry.dtype) == (
        "conditioning",
        frames,
        1024,
        "F32",
    )


def test_a_real_voice_on_a_narrower_model_names_both_widths(tts) -> None:
    path = REAL_VOICES / "fantine.safetensors"
    with pytest.raises(VoiceError) as info:
        tts.voices.load(path)
    assert one_line(info.value) == (
        f"{path}: voice in it is 1024 wide (made for a model with d_model 1024),"
        " but this model's d_model is 64"
    )


def test_the_web_demo_voices_bin_is_rebuilt_bit_for_bit_and_read_by_name(tts, tmp_path) -> None:
    path = tmp_path / "voices.bin"
    path.write_bytes(tensorfiles.real_voices_bin())
    assert hashlib.sha256(path.read_bytes()).hexdigest() == tensorfiles.VOICES_BIN_SHA256
    vf = identify(path)
    assert vf.format == "voices-bin" and vf.names == ("cosette", "jean", "fantine")
    assert [(v.frames, v.width) for v in vf.voices] == [(125, 1024), (125, 1024), (132, 1024)]
    with pytest.raises(VoiceError, match="holds 3 voices \\(cosette, jean, fantine\\): choose"):
        tts.voices.load(path)
    with pytest.raises(VoiceError, match="no voice 'alba'; its voices: cosette, jean, fantine"):
        tts.voices.load(path, "alba")
    with pytest.raises(VoiceError, match="voice 'jean' is 1024 wide") as info:
        tts.voices.load(path, "jean")
    one_line(info.value)


# --------------------------------------------------------------------------- tiny width


def _formats(tmp_path, c: np.ndarray) -> dict[str, tuple]:
    """The same conditioning in every conditioning format, under names that lie."""
    files = {}
    files["kyutai-audio-prompt"] = tensorfiles.write_arrays(
        tmp_path / "a.bin", {"audio_prompt": c[None]}, "F32"
    )
    path = tmp_path / "b.safetensors"
    path.write_bytes(tensorfiles.voices_bin({"other": cond(3, 9), "me": c}))
    files["voices-bin"] = path
    path = tmp_path / "c.safetensors"
    with open(path, "wb") as f:
        np.save(f, c.astype(np.float64))
    files["npy"] = path
    path = tmp_path / "d.npy"
    c.astype("<f4").tofile(path)
    files["fluidaudio-bin"] = path
    return files


def test_every_conditioning_format_gives_the_same_voice(tts, tmp_path) -> None:
    c = cond(12)
    voices = {}
    for fmt, path in _formats(tmp_path, c).items():
        assert identify(path).format == fmt
        voices[fmt] = tts.voices.load(path, "me" if fmt == "voices-bin" else None)
    reference = voices.pop("fluidaudio-bin")  # the format pockettts has always read
    assert reference.length == 13  # bos_before_voice + 12 frames
    for fmt, voice in voices.items():
        assert np.array_equal(voice.conditioning, c), fmt
        for a, b in zip(voice.keys + voice.values, reference.keys + reference.values, strict=True):
            assert np.array_equal(a, b), fmt


def test_bf16_and_f16_states_are_the_rounded_f32_state(tts, tmp_path, voice_path) -> None:
    state = load_file(str(voice_path))
    f32 = tts.voices.load(voice_path)
    for dtype, rounding in (
        ("BF16", tensorfiles.bf16_round),
        ("F16", lambda a: a.astype(np.float16).astype(np.float32)),
    ):
        kinds = {k: dtype if k.endswith("/cache") else "I64" for k in state}
        path = tensorfiles.write_arrays(tmp_path / f"{dtype}.voice", state, kinds)
        vf = identify(path)
        assert vf.format == "kyutai-state" and vf.voices[0].dtype == dtype
        voice = tts.voices.load(path)
        assert voice.length == f32.length
        assert np.array_equal(voice.keys[1], rounding(f32.keys[1]))
        assert not np.array_equal(voice.keys[1], f32.keys[1])


def test_unknown_tensors_next_to_known_ones_are_ignored_with_a_notice(tts, tmp_path, voice_path):
    state = load_file(str(voice_path))
    state["speaker/name"] = np.zeros(4, np.float32)
    path = tmp_path / "extra.safetensors"
    save_file(state, str(path))
    with pytest.warns(VoiceWarning, match="ignored 1 tensor\\(s\\) .*: speaker/name"):
        voice = tts.voices.load(path)
    assert voice.length == tts.voices.load(voice_path).length
    prompt = tmp_path / "prompt.safetensors"
    save_file({"audio_prompt": cond(5)[None], "mean": np.zeros(64, np.float32)}, str(prompt))
    notes: list[str] = []
    assert tts.voices.load(prompt, on_warning=notes.append).length == 6
    assert len(notes) == 1 and "mean" in notes[0]


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda p: save_file({"weight": np.zeros(3, np.float32)}, str(p)),
         "a safetensors file, but no voice \\(its tensors: weight\\); accepted voice files:"),
        (lambda p: p.write_bytes(b"RIFF" + b"\0" * 60),
         "looks like an audio recording.*with clone_voice"),  # the field (CLI: --clone-voice)
        (lambda p: p.write_bytes(b"abc"), "matches no voice format; accepted voice files:"),
        (lambda p: save_file({"audio_prompt": np.zeros((2, 3, 64), np.float32)}, str(p)),
         "audio_prompt has shape \\[2, 3, 64\\], expected \\[1, T, D\\] or \\[T, D\\]"),
        (lambda p: save_file({"audio_prompt": np.zeros((1, 3, 64), np.int32)}, str(p)),
         "audio_prompt has dtype I32"),
        (lambda p: save_file({"audio_prompt": np.full((1, 3, 64), np.nan, np.float32)}, str(p)),
         "holds NaN or infinite"),
        (lambda p: np.save(p, np.array(["x"], dtype=object), allow_pickle=True),
         ".npy array of object"),
        (lambda p: p.write_bytes(b"PTVB1" + struct.pack("<I", 1) + struct.pack("<H", 40) + b"a"),
         "PTVB1 container cut short"),
        (lambda p: p.write_bytes(b"PTVB1" + struct.pack("<I", 10**6)),
         "PTVB1 container says it holds 1000000 voices"),
    ],
)  # fmt: skip
def test_files_matching_no_format_say_what_is_accepted(tts, tmp_path, make, message) -> None:
    path = tmp_path / "voice.safetensors"
    make(path)
    if not path.exists():  # np.save appends .npy
        path = path.with_suffix(".safetensors.npy")
    with pytest.raises(VoiceError, match=message) as info:
        tts.voices.load(path)
    one_line(info.value)


def test_the_125_frame_rule_still_holds_for_fluidaudio_bin_only(tts, tmp_path) -> None:
    raw = tmp_path / "long.bin"
    cond(126).astype("<f4").tofile(raw)
    with pytest.raises(VoiceError, match="too large: 126 frames, at most 125"):
        tts.voices.load(raw)
    prompt = tensorfiles.write_arrays(tmp_path / "long.st", {"audio_prompt": cond(126)}, "BF16")
    assert tts.voices.load(prompt).length == 127  # Kyutai's embeddings have no such limit


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_corrupted_voices_bin_is_a_clean_error_or_a_voice(tts, tmp_path_factory, data) -> None:
    tmp = tmp_path_factory.mktemp("vbin")
    raw = bytearray(tensorfiles.voices_bin({"a": cond(2, 1), "bb": cond(3, 2)}))
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, 120))  # the counts, names and sizes
        raw[at] = data.draw(st.integers(0, 255))
    raw = raw[: data.draw(st.integers(1, len(raw)))]
    path = tmp / "voices.bin"
    path.write_bytes(bytes(raw))
    try:
        vf = identify(path)
        if vf.format == "voices-bin":
            assert sum(4 * v.frames * v.width + 40 for v in vf.voices) + 4 == len(raw)
        tts.voices.load(path, vf.names[0] if vf.names else None)
    except VoiceError as exc:
        one_line(exc)


# --------------------------------------------------------------------------- the CLI


# The CLI's output, read as text.
run = partial(cli.run, text=True)


def test_tts_picks_a_voice_of_a_voices_bin_with_v(pack_dir, tmp_path) -> None:
    path = tmp_path / "voices.bin"
    path.write_bytes(tensorfiles.voices_bin({"cosette": cond(8, 1), "marius": cond(6, 2)}))
    out = tmp_path / "o.wav"
    common = ("Hi there.", "--model-dir", str(pack_dir), "--voice-file", str(path), "-q")
    ok = run("tts", *common, "-v", "marius", "-o", str(out))
    assert ok.returncode == 0, ok.stderr
    assert out.stat().st_size > 44
    cases = (
        ([], "holds 2 voices (cosette, marius): choose one with --voice NAME"),
        (["-v", "alba"], "no voice 'alba'; its voices: cosette, marius"),
    )
    for extra, fragment in cases:
        r = run("tts", *common, *extra, "-o", str(tmp_path / "x.wav"))
        assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
        assert fragment in r.stderr
        assert not (tmp_path / "x.wav").exists()


def test_inspect_tells_format_frames_width_and_fitting_models(tmp_path) -> None:
    r = run("inspect", str(REAL_VOICES / "fantine.safetensors"))
    assert r.returncode == 0, r.stderr
    assert "Kyutai voice embedding (safetensors 'audio_prompt', 2026-01)" in r.stdout
    assert "132 frames, width 1024, F32" in r.stdout and "english_2026-01" in r.stdout
    path = tmp_path / "voices.bin"
    path.write_bytes(tensorfiles.real_voices_bin())
    report = json.loads(run("inspect", str(path), "--json").stdout)
    assert report["format"] == "voices-bin"
    assert [(v["name"], v["frames"], v["width"]) for v in report["voices"]] == [
        ("cosette", 125, 1024),
        ("jean", 125, 1024),
        ("fantine", 132, 1024),
    ]
    assert "english" in report["voices"][0]["fits"]
    assert "english_2m_2026-10" not in report["voices"][0]["fits"]  # 112 wide


def test_inspect_a_voice_state_and_a_bf16_checkpoint(tmp_path, voice_path, fixture_dir) -> None:
    r = run("inspect", str(voice_path))
    assert r.returncode == 0, r.stderr
    assert "Kyutai voice state" in r.stdout and "2 layers x 4 KV heads x 16, F32" in r.stdout
    weights = load_file(str(fixture_dir / "model.safetensors"))
    kinds = {k: "F32" if v.ndim == 1 else "BF16" for k, v in weights.items()}
    ckpt = tensorfiles.write_arrays(tmp_path / "m.safetensors", weights, kinds)
    report = json.loads(run("inspect", str(ckpt), "--json").stdout)
    assert report["kind"] == "checkpoint"
    assert report["parameters"] == sum(v.size for v in weights.values())
    assert report["dtypes"] == {
        d: sum(1 for k in kinds.values() if k == d) for d in ("BF16", "F32")
    }
    assert report["d_model"] == 64 and report["flow_lm_layers"] == 2
    bad = run("inspect", str(tmp_path / "missing.bin"))
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1


def test_tts_reports_ignored_tensors_once_and_quiet_keeps_the_one_line(
    pack_dir, tmp_path, voice_path
):
    state = load_file(str(voice_path))
    state["speaker/name"] = np.zeros(4, np.float32)
    path = tmp_path / "extra.safetensors"
    save_file(state, str(path))
    args = ("Hi.", "--model-dir", str(pack_dir), "--voice-file", str(path))
    loud = run("tts", *args, "-o", str(tmp_path / "a.wav"))
    assert loud.returncode == 0, loud.stderr
    notes = [line for line in loud.stderr.splitlines() if "ignored" in line and "warning" in line]
    assert notes == [f"pockettts: warning: {path}: ignored 1 tensor(s) that are no part of a voice:"
                     " speaker/name"]  # fmt: skip
    # -q hides the summary and notes; a warning stays one clean line, never Python's own.
    quiet = run("tts", *args, "-q", "-o", str(tmp_path / "b.wav"))
    assert quiet.returncode == 0 and quiet.stderr.splitlines() == notes, quiet.stderr


def test_a_legacy_state_with_current_end_instead_of_offset(tts, tmp_path, voice_path) -> None:
    """Kyutai's older states mark their length by the shape of a ``current_end`` tensor."""
    state = load_file(str(voice_path))
    f32 = tts.voices.load(voice_path)
    legacy = {}
    for key, value in state.items():
        if key.endswith("/offset"):
            legacy[key.replace("/offset", "/current_end")] = np.zeros(f32.length, np.float32)
        elif key.endswith("/cache"):
            legacy[key] = value
    path = tensorfiles.write_arrays(tmp_path / "legacy.safetensors", legacy, "BF16")
    voice = tts.voices.load(path)
    assert voice.length == f32.length
    assert np.array_equal(voice.values[0], tensorfiles.bf16_round(f32.values[0]))


def test_v_inside_a_voices_bin_is_used_not_reported_as_ignored(pack_dir, tmp_path) -> None:
    """With a container, -v picks the voice (so no "--voice ignored" note, and any
    case works, as for built-in names); with a one-voice file it is ignored, and said so."""
    path = tmp_path / "voices.bin"
    path.write_bytes(tensorfiles.voices_bin({"cosette": cond(8, 1), "marius": cond(6, 2)}))
    common = ("Hi there.", "--model-dir", str(pack_dir), "-o", str(tmp_path / "o.wav"))
    picked = run("tts", *common, "--voice-file", str(path), "-v", "Marius")
    assert picked.returncode == 0, picked.stderr
    assert "ignored" not in picked.stderr, picked.stderr
    single = tmp_path / "one.npy"
    np.save(single, cond(5, 3))
    one = run("tts", *common, "--voice-file", str(single), "-v", "alba")
    assert one.returncode == 0, one.stderr
    assert "--voice-file wins over --voice" in one.stderr


def test_container_names_are_case_insensitive_but_exact_names_win(tts, tmp_path) -> None:
    path = tmp_path / "voices.bin"
    voices = {"Eve": cond(4, 1), "eve": cond(5, 2), "Jo": cond(6, 3)}
    path.write_bytes(tensorfiles.voices_bin(voices))
    assert tts.voices.load(path, "Eve").length == 5  # bos_before_voice + 4 frames
    assert tts.voices.load(path, "eve").length == 6
    assert tts.voices.load(path, "JO").length == 7
    with pytest.raises(VoiceError, match="no voice 'EVE'; its voices: Eve, eve, Jo"):
        tts.voices.load(path, "EVE")  # two names differ only in case: say so, pick none


def test_inspect_a_folder_says_so_and_help_names_path(tmp_path) -> None:
    r = run("inspect", str(tmp_path))
    assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
    assert f"{tmp_path} is a folder that holds no model" in r.stderr
    usage = run("inspect", "--help").stdout
    assert "PATH" in usage.splitlines()[0]


def test_a_fluidaudio_bin_of_another_width_points_at_inspect(tts, tmp_path) -> None:
    """FluidAudio's .bin has no header: a 1024-wide voice on a 64-wide model reads as
    2000 frames, so the error says where to learn its width instead of only 'too large'."""
    path = tmp_path / "cosette.bin"
    load_file(str(REAL_VOICES / "cosette.safetensors"))["audio_prompt"][0].tofile(path)
    with pytest.raises(VoiceError, match="pockettts inspect") as info:
        tts.voices.load(path)
    one_line(info.value)
    assert "width 1024" in run("inspect", str(path)).stdout
