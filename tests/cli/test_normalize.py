"""`pockettts normalize` run as the real console script."""

from __future__ import annotations

from functools import partial

import pytest

from tests.support.cli import run as pockettts

# Every test here runs `pockettts normalize`.
run = partial(pockettts, "normalize")


def test_prints_what_would_be_spoken() -> None:
    r = run("Dr. Smith paid $5 on 2024-03-15. [pause] Bye [pause:1.5s] now")
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode() == (
        "Doctor Smith paid five dollars on March fifteenth, twenty "
        "twenty-four. [pause 0.50s] Bye [pause 1.50s] now\n"
    )


def test_language_and_stdin() -> None:
    r = run("--language", "german_24l", stdin="Am 3. März um 14:30 Uhr.".encode())
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode() == "Am dritten März um vierzehn Uhr dreißig.\n"


def test_ssml_with_warnings_on_stderr() -> None:
    r = run('<speak>Wait<break time="1s"/><foo>now</foo></speak>')
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode() == "Wait [pause 1.00s] now\n"
    assert b"warning: ignored SSML tag <foo>" in r.stderr


def test_forced_ssml_and_dropping_addresses() -> None:
    r = run(
        "--ssml",
        "--urls",
        "drop",
        "--emails",
        "drop",
        'See www.example.com or a@b.org<break time="2s"/>ok',
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode() == "See or [pause 2.00s] ok\n"


def test_capped_pause_warns() -> None:
    r = run("A [pause:30s] B")
    assert r.returncode == 0 and r.stdout.decode() == "A [pause 10.00s] B\n"
    assert b"capped" in r.stderr


@pytest.mark.parametrize(
    "args, stdin, message",
    [
        (["x", "--language", "klingon"], None, b"english, french, german"),
        (["x", "--urls", "maybe"], None, b"read, drop"),
        (["<speak><p>x</speak>"], None, b"line 1, column 14"),
        (["[pause:later]"], None, b"line 1, column 1"),
        ([], b"   ", b"empty"),
        ([], b"caf\xe9 noir", b"not UTF-8"),  # Latin-1, no byte order mark
        (["--bogus"], None, b"No such option"),
    ],
)
def test_usage_errors_exit_2(args: list[str], stdin: bytes | None, message: bytes) -> None:
    r = run(*args, stdin=stdin)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert message in r.stderr
    assert r.stdout == b""


def test_help_has_examples() -> None:
    r = run("--help")
    assert r.returncode == 0 and b"Examples:" in r.stdout


def test_cli_language_list_matches_the_normaliser() -> None:
    from pocketcli.cli.normalize import LANGUAGES
    from pocketcli.normalize import SUPPORTED_LANGUAGES

    assert set(LANGUAGES) == set(SUPPORTED_LANGUAGES)
