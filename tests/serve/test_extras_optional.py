"""The protocol front ends stay optional: a plain install pulls none of their libraries,
the library works without them, and serve without websockets says what /tts/ws needs."""

from __future__ import annotations

import subprocess
import sys
import tomllib

from tests.support import paths
from tests.support.protohelp import TINY_ARGS
from tests.support.servehelp import wait_ready

ROOT = paths.ROOT
OPTIONAL = ("websockets", "wyoming", "mcp")


def test_a_plain_install_pulls_no_protocol_library() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = " ".join(project["dependencies"]).lower()
    assert not [name for name in OPTIONAL if name in core]
    extras = project["optional-dependencies"]
    assert any(d.startswith("wyoming") for d in extras["wyoming"])
    assert any(d.startswith("mcp") for d in extras["mcp"])
    assert any(d.startswith("websockets") for d in extras["serve"])


def test_the_library_and_tts_work_with_the_protocol_libraries_hidden(tmp_path) -> None:
    out = tmp_path / "hi.wav"
    hide = "".join(f"sys.modules[{name!r}] = None; " for name in OPTIONAL)
    code = (
        f"import sys; {hide}"
        f"sys.argv = ['pockettts', 'tts', 'Hello.', '-o', {str(out)!r}, *{list(TINY_ARGS)!r}];"
        "from pocketcli.cli.entry import run; run()"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert out.stat().st_size > 44


def test_serve_without_websockets_says_what_the_websocket_needs() -> None:
    code = (
        "import sys; sys.modules['websockets'] = None; sys.modules['wsproto'] = None;"
        f"sys.argv = ['pockettts', 'serve', '--port', '0', *{list(TINY_ARGS)!r}];"
        "from pocketcli.cli.entry import run; run()"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE)
    try:
        assert proc.stderr is not None
        lines = []
        while not any('"listening"' in line for line in lines):
            line = proc.stderr.readline().decode()
            assert line, f"the server ended: {lines}"
            lines.append(line)
        url = [line for line in lines if '"listening"' in line][0].split('"url": "')[1]
        wait_ready(url.split('"')[0])  # and the HTTP API serves as before
        warned = [line for line in lines if "/tts/ws needs the websockets package" in line]
        assert warned and "pip install 'pockettts[serve]'" in warned[0]
    finally:
        proc.terminate()
        proc.wait(30)
