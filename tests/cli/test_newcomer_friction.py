"""A newcomer's friction (issue 32 item 7), each case as the newcomer met it: the real
``pockettts`` console script on the committed tiny pack, its stderr read as a user would."""

from __future__ import annotations

from pathlib import Path

import pytest

from pocketcli.runtimes import registry
from tests.support import paths
from tests.support.cli import run


@pytest.mark.parametrize(
    "args, meant",
    [
        (["tts", "Bonjour.", "--language", "fr", "-o", "x.wav"], "french"),
        (["voices", "--language", "klingon"], None),
        (["voices", "--language", "nl"], "dutch"),  # a code, no prefix of the name
        (["voices", "--language", "Spanih"], "spanish"),
    ],
)
def test_an_unknown_language_says_the_close_match_and_the_whole_list(tmp_path, args, meant):
    r = run(*args, cwd=tmp_path, cache=tmp_path / "cache", text=True)
    assert r.returncode == 2, r.stderr
    first = r.stderr.splitlines()[0]
    names = first.split("choose from", 1)[1].strip(" :").split(", ")
    assert names == list(registry.all_languages())  # the whole list, none cut
    assert "quote a text" not in r.stderr
    if meant is not None:
        assert f"did you mean '{meant}'?" in first
    else:
        assert "did you mean" not in first
    assert not (tmp_path / "x.wav").exists()


def test_a_long_unknown_name_is_cut_not_the_list(tmp_path) -> None:
    r = run("voices", "--language", "x" * 5000, cwd=tmp_path, text=True)
    assert r.returncode == 2
    first = r.stderr.splitlines()[0]
    assert len(first) < 1000 and first.endswith(registry.all_languages()[-1])


PACK = paths.TINY / "pack"
VOICE = paths.TINY / "voice.safetensors"


def test_a_batch_line_with_nothing_to_say_is_refused_for_its_text(tmp_path) -> None:
    """``###`` and a malformed ``<speak>`` can never be spoken as they are: refused for
    their text, so ``--accept-refused`` passes on the first run and on every re-run."""
    lines = tmp_path / "lines.txt"
    lines.write_text("Hello there.\n###\n<speak>oops\n", encoding="utf-8")
    out = tmp_path / "out"
    args = ["tts", "--input-file", lines, "--output-dir", out, "--model-dir", PACK,
            "--voice-file", VOICE, "-q"]  # fmt: skip
    first = run(*args, "--accept-refused", text=True)
    assert first.returncode == 0, first.stderr
    assert "2 refused for their text" in first.stderr
    again = run(*args, "--accept-refused", text=True)
    assert again.returncode == 0, again.stderr
    strict = run(*args, text=True)
    assert strict.returncode == 1 and "2 refused for their text" in strict.stderr
    assert len(list(out.glob("*.wav"))) == 1


@pytest.mark.parametrize(
    "text, named",
    [("Привет мир", "Cyrillic"), ("你好", "Chinese (CJK)"), ("###", None)],
)
def test_text_in_a_script_the_model_cannot_read_names_the_script(tmp_path, text, named):
    out = tmp_path / "a.wav"
    r = run("tts", text, "--model-dir", PACK, "--voice-file", VOICE, "-o", out, text=True)
    assert r.returncode == 2 and not out.exists()
    first = r.stderr.splitlines()[0]
    if named is None:
        assert first.endswith("(only symbols?)"), first
    else:
        assert f"cannot read {named} letters" in first and "symbols" not in first, first


def _packs() -> dict[str, Path]:
    from tests.support.bundlehelp import tiny_bundle
    from tests.support.webhelp import tiny_web_pack

    return {"onnx": PACK, "kevinahm": tiny_bundle(), "browser": tiny_web_pack()}


@pytest.mark.parametrize("layout", ["onnx", "kevinahm", "browser"])
def test_an_unknown_voice_is_a_usage_error_on_every_pack(tmp_path, layout) -> None:
    out = tmp_path / "a.wav"
    r = run("tts", "Hi.", "--model-dir", _packs()[layout], "-v", "nosuch", "-o", out,
            text=True, cache=tmp_path / "cache")  # fmt: skip
    assert r.returncode == 2, r.stderr
    assert "nosuch" in r.stderr.splitlines()[0] and not out.exists()


def test_kyutais_generate_points_to_tts(tmp_path) -> None:
    r = run("generate", "--text", "Hello.", cwd=tmp_path, text=True)
    assert r.returncode == 2
    assert "`pockettts tts`" in r.stderr.splitlines()[0], r.stderr
    other = run("gen", cwd=tmp_path, text=True)  # no pointer for what is not Kyutai's
    assert other.returncode == 2 and "pockettts tts" not in other.stderr


def test_a_long_clone_to_bin_says_one_frame_count_and_inspect_reads_it(tmp_path) -> None:
    """``clone a.wav -o a.bin`` of 14.7 s: the warning keeps 125 frames and the summary
    says 125 (it said 182); ``inspect a.bin --model-dir PACK`` reads the clone just made
    (the tiny model's width is no published model's)."""
    import numpy as np
    import soundfile as sf

    clip, rate = sf.read(paths.TINY / "clone_prompt_24k.wav", dtype="float32")
    long = tmp_path / "long.wav"
    sf.write(long, np.tile(clip, 7), rate)
    voice = tmp_path / "a.bin"
    r = run("clone", long, "--model-dir", PACK, "-o", voice, text=True)
    assert r.returncode == 0, r.stderr
    assert "kept the first 125 of" in r.stderr and "(125 frames)" in r.stderr, r.stderr
    assert voice.stat().st_size == 125 * 64 * 4
    seen = run("inspect", voice, "--model-dir", PACK, text=True)
    assert seen.returncode == 0, seen.stderr
    assert "125 frames of width 64" in seen.stdout and str(PACK) in seen.stdout
    alone = run("inspect", voice, text=True)
    assert alone.returncode == 1 and "--model-dir" in alone.stderr
