"""A long run of digits (pasted data, a number with a hundred thousand decimals) is
normalized in linear time: found by scripts/hostile_sweep.py, where the web-address
pass tried every digit of "0.999..." as a domain's start (quadratic: 64 kB of digits took
100 s, and `serve --max-chars 1000000` let one request hold the model for hours)."""

from __future__ import annotations

import subprocess

import pytest

from tests.support import cli

RUN = "0." + "9" * 100_000  # ~3 s now; ~4 minutes when quadratic


@pytest.mark.parametrize("text", [RUN, "1." + "9." * 50_000], ids=["digits", "dotted"])
def test_a_long_digit_run_is_normalized_well_within_a_minute(text) -> None:
    try:
        r = cli.run("normalize", stdin=text.encode(), timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("normalizing 100 kB of digits took over a minute (quadratic)")
    assert r.returncode == 0, r.stderr
    assert r.stdout.count(b"nine") >= 50_000


def test_an_address_after_a_digit_is_still_read_as_one() -> None:
    r = cli.run("normalize", "Visit 24example.com or 3 example.org today.")
    assert r.returncode == 0, r.stderr
    assert b"dot com" in r.stdout and b"dot org" in r.stdout, r.stdout
