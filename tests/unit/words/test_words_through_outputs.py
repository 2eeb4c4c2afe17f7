"""Word times through what follows the model (issue 35 item 4): the file's format (opus
resampled to 48 kHz, raw 16-bit, MP3), the output chain on or off, and an SSML break. Times
are seconds of the audio heard, so only a pause or a break may move them; the real console
script on the tiny pack that times words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import soundfile as sf

from tests.support.cli import run

TEXT = "Hello there, this is the longest line. It is spoken in several chunks!"


def _words(pack: Path, tmp_path: Path, name: str, text: str, *extra: str) -> list[dict]:
    out = tmp_path / name
    done = run(
        "tts",
        text,
        "--model-dir",
        pack,
        "--seed",
        "3",
        "-o",
        out,
        "--words",
        str(tmp_path / f"{name}.json"),
        "--eos-threshold",
        "1000",
        *extra,
    )
    assert done.returncode == 0, done.stderr
    assert out.stat().st_size > 0
    return json.loads((tmp_path / f"{name}.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("name", "extra"),
    [("a.opus", ()), ("a.raw", ("--format", "s16le")), ("a.mp3", ()), ("b.wav", ("--no-deess",))],
)
def test_a_format_or_the_output_chain_moves_no_word(words_pack, tmp_path, name, extra) -> None:
    plain = _words(words_pack, tmp_path, "a.wav", TEXT)
    assert len(plain) >= 4
    assert _words(words_pack, tmp_path, name, TEXT, *extra) == plain


def test_an_ssml_break_moves_the_words_after_it_by_its_length(words_pack, tmp_path) -> None:
    ssml = '<speak>Hello there. <break time="1500ms"/> Spoken after it.</speak>'
    short = '<speak>Hello there. <break time="500ms"/> Spoken after it.</speak>'
    longer = _words(words_pack, tmp_path, "l.wav", ssml, "--ssml")
    shorter = _words(words_pack, tmp_path, "s.wav", short, "--ssml")
    seconds = sf.info(tmp_path / "l.wav").duration - sf.info(tmp_path / "s.wav").duration
    assert seconds == pytest.approx(1.0, abs=0.09)  # the break, give or take a frame
    assert [w["word"] for w in longer] == [w["word"] for w in shorter]
    after = [w["word"] for w in longer].index("Spoken")
    for a, b in zip(longer, shorter, strict=True):
        moved = 1.0 if longer.index(a) >= after else 0.0
        assert a["start"] - b["start"] == pytest.approx(moved, abs=0.09)
        assert a["end"] - b["end"] == pytest.approx(moved, abs=0.09)
