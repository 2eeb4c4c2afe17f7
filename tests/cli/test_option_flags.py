"""A refused option value names the flag the user typed, not the library's field."""

from __future__ import annotations

import re

import pytest

from pocketcli.options import MAX_TEMPERATURE
from tests.support.cli import run


@pytest.mark.parametrize(
    "flag, value, problem",
    [
        ("--max-tokens", "5000", "must be from 1 to 1000, not 5000"),
        ("--seed", "-1", "must be a whole number from 0 to 2^64-1, not -1"),
        ("--seed", "abc", "must be a whole number from 0 to 2^64-1, not 'abc'"),
        ("--seed", "1.5", "must be a whole number from 0 to 2^64-1, not '1.5'"),
        ("--noise-clamp", "0", "must be a number above 0 (or None), not 0.0"),
    ],
)
def test_refused_values_name_the_flag(tmp_path, flag, value, problem) -> None:
    """SpeakOptions refuses them (its message says max_tokens...); the CLI says the flag."""
    r = run("tts", "Hi.", flag, value, cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.decode().splitlines()
    assert lines == [
        f"pockettts: error: {flag} {problem}",
        "pockettts: hint: 'pockettts tts --help' lists the options and values",
    ]
    assert not list(tmp_path.iterdir())  # refused before anything is written


def test_temperature_help_and_refusal_show_the_real_range(tmp_path) -> None:
    help_text = " ".join(run("tts", "--help").stdout.decode().split())
    shown = re.search(r"(\d+(?:\.\d+)?)<=x<=(\d+(?:\.\d+)?)", help_text)
    assert shown is not None, help_text
    assert float(shown[1]) == 0.0 and float(shown[2]) == MAX_TEMPERATURE
    assert "x>=0.0" not in help_text
    r = run("tts", "Hi.", "--temperature", str(MAX_TEMPERATURE + 1), cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.decode().splitlines()
    assert len(lines) == 2 and "'--temperature'" in lines[0], lines
    assert lines[1].startswith("pockettts: hint: 'pockettts tts --help'")
