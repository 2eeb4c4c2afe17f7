"""Refusals a server gives before it listens (a user's sweep, fourth session): `serve
--api-key ""` (a variable that was not set) started a server with no key at all, and
Wyoming's address that names no host said "unknown error -2"."""

from __future__ import annotations

import pytest

from tests.support.cli import cli_env, run
from tests.support.servehelp import PACK

TINY = ("--model-dir", str(PACK))


@pytest.mark.parametrize("key", ["", "   "])
def test_an_empty_api_key_is_a_usage_error(key) -> None:
    r = run("serve", "--port", "0", *TINY, "--api-key", key, timeout=20)  # a served run never ends
    err = r.stderr.decode()
    assert r.returncode == 2, err
    assert err.splitlines()[0].startswith("pockettts: error: ") and "--api-key" in err, err
    assert "listening" not in err


def test_an_unset_api_key_variable_still_means_no_key(tmp_path) -> None:
    # POCKETTTS_API_KEY= (empty) is "not set", as click reads every variable: no refusal
    r = run("serve", "--port", "70000", *TINY, env=cli_env(POCKETTTS_API_KEY=""))
    assert (
        r.returncode == 2 and "--port" in r.stderr.decode() and "--api-key" not in r.stderr.decode()
    )


@pytest.mark.parametrize("uri", ["tcp://no-such-host.invalid:10200", "tcp://999.1.1.1:1"])
def test_wyoming_names_why_a_host_cannot_be_listened_on(uri) -> None:
    r = run("wyoming", "--uri", uri, *TINY, timeout=60)
    err = r.stderr.decode()
    assert r.returncode == 1, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("pockettts: error: cannot listen on "), err
    assert "unknown error" not in last.lower() and "-2" not in last, last
