"""A text that starts with '-' ("-5 degrees") is taken for an option by the parser; the
usage error says how to give it (a user's sweep, fourth session: "No such option: -5" and
nothing more), and following the advice speaks it."""

from __future__ import annotations

import pytest

from tests.support import cli


@pytest.mark.parametrize("text", ["-5 degrees outside", "-3.5", "--- hello ---", "-x marks it"])
def test_tts_names_text_and_the_way_to_give_it(text) -> None:
    r = cli.run("tts", text, "-o", "a.wav")
    err = r.stderr.decode()
    assert r.returncode == 2, err
    first = err.splitlines()[0]
    assert first.startswith("pockettts: error: ") and "starts with '-'" in first, err
    assert "--text" in first and len(err.splitlines()) == 2


def test_normalize_says_after_double_dash_and_that_works() -> None:
    r = cli.run("normalize", "-5 degrees", "--language", "english")
    err = r.stderr.decode()
    assert r.returncode == 2 and "starts with '-'" in err and " -- " in err, err
    ok = cli.run("normalize", "--language", "english", "--", "-5 degrees")
    assert ok.returncode == 0 and ok.stdout.decode().strip() == "minus five degrees"


def test_tts_text_flag_takes_it(tmp_path, pack_dir, voice_path) -> None:
    r = cli.run(
        *("tts", "--text", "-5 degrees", "-o", "a.wav", "--model-dir", pack_dir),
        *("--voice-file", voice_path, "-q"),
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "a.wav").stat().st_size > 44


def test_an_unknown_option_is_not_called_text() -> None:
    r = cli.run("tts", "Hello.", "--nope")
    assert r.returncode == 2 and "starts with '-'" not in r.stderr.decode()
