"""What a CLI run imports: speaking with a pack never loads the pack builders' libraries.

Every test that runs the console script pays its start-up, and so does every user's
``pockettts tts``: ``onnx`` (with ``ml_dtypes``, about a second of CPU), torch and scipy
serve building and checking packs, not speaking one. The browser runtime is offered
every ``--model-dir``, so its check of the folder must not import the builder either.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

import pocketcli

HEAVY = ("onnx", "ml_dtypes", "torch", "scipy")
PROBE = (
    "import atexit, sys\n"
    f"heavy = {HEAVY!r}\n"
    "atexit.register(lambda: print('imported:', *sorted(m for m in heavy if m in sys.modules)))\n"
    "sys.argv = ['pockettts', *sys.argv[1:]]\n"
    "from pocketcli.cli.entry import run\n"
    "run()\n"
)


@pytest.mark.parametrize("what", ["speak", "usage error"])
def test_speaking_with_a_pack_imports_no_pack_builder(pack_dir, voice_path, tmp_path, what):
    args = ["tts", "Hello there.", "-o", str(tmp_path / "out.wav"), "--model-dir", str(pack_dir)]
    args += ["--voice-file", str(voice_path), "-q"]
    if what == "usage error":
        args += ["--temperature", "nan"]
    r = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == (0 if what == "speak" else 2), r.stderr
    assert r.stdout.strip().splitlines()[-1] == "imported:", r.stdout


def _probe(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", PROBE, *map(str, args)], capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("layout", ["kevinahm", "browser"])
def test_speaking_with_a_bundle_or_a_browser_pack_imports_no_exporter(tmp_path, layout):
    """Opening a KevinAHM bundle or a browser pack used to import ``onnx`` (and
    ``ml_dtypes``) through the exporter: 1.5-1.8 s of a 4.8 s run (issue 32)."""
    from tests.support.bundlehelp import tiny_bundle
    from tests.support.webhelp import tiny_web_pack

    pack = tiny_bundle() if layout == "kevinahm" else tiny_web_pack()
    r = _probe("tts", "Hello there.", "-o", tmp_path / "out.wav", "--model-dir", pack, "-q")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "imported:", r.stdout


def test_version_imports_neither_numpy_nor_the_command_line() -> None:
    """``pockettts --version`` is a probe scripts run often: it prints and ends."""
    probe = PROBE.replace(f"heavy = {HEAVY!r}", "heavy = ('numpy', 'typer', 'click')")
    r = subprocess.run(
        [sys.executable, "-c", probe, "--version"], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [f"pockettts {pocketcli.__version__}", "imported:"]
