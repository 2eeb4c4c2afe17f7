"""`pockettts serve`'s stderr is JSON lines and nothing else, even while a C decoder that
prints on its own (libmpg123, inside libsndfile) decodes an uploaded MP3 that is damaged:
found by scripts/hostile_sweep.py ("Note: Illegal Audio-MPEG-Header ..." in the log)."""

from __future__ import annotations

import json
import signal

import httpx
import numpy as np

from tests.support.cli import SCRIPT
from tests.support.servehelp import PACK, VOICE, spawn

DAMAGED_MP3 = b"\xff\xfb" + np.random.default_rng(29).bytes(8192)  # a frame sync, then noise


def test_a_damaged_mp3_upload_leaves_only_json_lines_on_stderr() -> None:
    with spawn(SCRIPT, "--model-dir", str(PACK), "--voice-file", str(VOICE)) as (proc, url):
        with httpx.Client(base_url=url, timeout=60) as client:
            for _ in range(3):
                r = client.post("/v1/voices", files={"file": ("a.mp3", DAMAGED_MP3)})
                assert r.status_code == 400, r.text
                assert "pipe" not in r.text, r.text  # an upload is no file, let alone a pipe
            r = client.post(
                "/v1/audio/speech", json={"model": "tts-1", "input": "Hello.", "voice": "voice"}
            )
            assert r.status_code == 200, r.text
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
        assert proc.stderr is not None
        logged = proc.stderr.read().decode(errors="replace").splitlines()
    not_json = [line for line in logged if line.strip() and not line.startswith("{")]
    assert not_json == [], not_json[:3]
    events = [json.loads(line)["event"] for line in logged if line.startswith("{")]
    assert "ready" in events and "stopped" in events, events


def test_a_log_configured_on_a_stream_with_no_descriptor_follows_sys_stderr() -> None:
    """``configure`` under a stream with no descriptor (a test's capture, an embedding
    program's buffer) that is closed and swapped afterwards: later lines go to the
    ``sys.stderr`` of their moment, as JSON, never a "--- Logging error ---" traceback of a
    handler still holding the closed stream (seen after in-process server tests)."""
    import contextlib
    import io

    from pocketcli.frontends import logs
    from tests.support.logstate import loggers_restored

    first, second = io.StringIO(), io.StringIO()
    with loggers_restored():
        with contextlib.redirect_stderr(first):
            logs.configure("info")
            logs.logger().info("while configured")
        said_first = first.getvalue()
        first.close()
        with contextlib.redirect_stderr(second):
            logs.logger().info("after the stream was closed")
    assert [json.loads(line)["event"] for line in said_first.splitlines()] == ["while configured"]
    lines = second.getvalue().splitlines()
    assert [json.loads(line)["event"] for line in lines] == ["after the stream was closed"], lines
