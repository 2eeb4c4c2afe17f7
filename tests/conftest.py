"""Shared fixtures: the committed tiny model (see scripts/make_fixture_pack.py)."""

from __future__ import annotations

import compileall
import json
import os
import shutil
from pathlib import Path

import pytest
from filelock import FileLock
from hypothesis import HealthCheck, settings

from tests.support.paths import FIXTURES, PACKAGE

# Property tests run the same examples on every run unless asked otherwise: "ci" (the
# default, and what .ci/run selects) is derandomised with a fixed number of examples, so
# what a fuzzer catches does not change from run to run. HYPOTHESIS_PROFILE=explore draws
# fresh random examples (more of them) to look for new failures by hand.
settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=100,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("explore", max_examples=1000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

FIXTURE = FIXTURES / "tiny"
# The tiny model with a loud last decoder layer: its raw audio crosses zero and passes full
# scale (about -1.26 to 1.06; the tiny model's is 0.0 to 0.25). Every test of clipping,
# peak normalisation and the output chain uses it. Voice: the tiny fixture's.
LOUD = FIXTURES / "loud"


def pytest_sessionstart(session: pytest.Session) -> None:
    """Bytecode for the package before the first CLI run. Most tests run the console
    script in a fresh process; where PYTHONDONTWRITEBYTECODE is set (this machine sets
    it) each of those compiled every pocketcli module from source again (~0.1 CPU s a
    run). compileall writes the caches whatever that variable says; Python reads them
    either way and recompiles any whose source changed. Under pytest-xdist the
    controller does it once, before its workers start (``workerinput`` marks a worker)."""
    if not hasattr(session.config, "workerinput"):
        compileall.compile_dir(str(PACKAGE), quiet=1)


# Tests that must not overlap one another when pytest-xdist spreads the suite over
# workers (README's test command: `-n 2`): a test whose node id starts with a key here
# holds that group's lock while it runs, so no two of a group ever run at once, while the
# other worker goes on with the rest. (xdist's own `xdist_group` only steers the
# scheduler, and with pytest 9.2 it no longer does: its node id suffix is ignored.)
EXCLUSIVE = {
    # The machine as a whole: a local Ray instance sized to both cores, a batch pinned
    # to one core by CPU affinity, and the signal-sequence stress (thirty runs racing
    # their own signals) each assume no second such test competes with them.
    "tests/cli/batch/test_ray.py": "machine",
    "tests/serve/test_ray_serve.py": "machine",
    "tests/cli/batch/test_run.py::test_jobs_auto_on_one_core": "machine",
    "tests/cli/test_signal_sequences.py": "machine",
    # One headless Chromium at a time (each is a few hundred MB and several processes).
    "tests/serve/test_browser_page.py": "browser",
    "tests/unit/packs/test_web_pack_in_chromium.py": "browser",
    # ALSA's null device through PortAudio: one process opens it at a time.
    "tests/unit/audio/test_playback.py": "audio-device",
    "tests/serve/test_mcp.py::test_speak_plays_on_the_device_in_turn_and_stops": "audio-device",
    "tests/serve/test_mcp_queue.py": "audio-device",
}


def exclusive_group(nodeid: str) -> str | None:
    return next((g for prefix, g in EXCLUSIVE.items() if nodeid.startswith(prefix)), None)


@pytest.fixture(autouse=True)
def _exclusive(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """Holds the test's group lock (see ``EXCLUSIVE``) under xdist; the workers of one
    run share their base temporary folder's parent, so the lock is per run."""
    group = exclusive_group(request.node.nodeid)
    if group is None or "PYTEST_XDIST_WORKER" not in os.environ:
        yield
        return
    with FileLock(tmp_path_factory.getbasetemp().parent / f"exclusive-{group}.lock"):
        yield


@pytest.fixture(scope="session")
def fixture_dir() -> Path:
    return FIXTURE


@pytest.fixture(scope="session")
def pack_dir() -> Path:
    return FIXTURE / "pack"


@pytest.fixture(scope="session")
def voice_path() -> Path:
    return FIXTURE / "voice.safetensors"


@pytest.fixture(scope="session")
def reference() -> dict:
    return json.loads((FIXTURE / "reference.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def loud_pack_dir() -> Path:
    return LOUD / "pack"


@pytest.fixture(scope="session")
def loud_reference() -> dict:
    return json.loads((LOUD / "reference.json").read_text(encoding="utf-8"))


@pytest.fixture
def pack_built_for(pack_dir, tmp_path):
    """``make(language)``: a copy of the tiny pack recorded as built for ``language``
    (as `pockettts download` records it)."""

    def make(language: str) -> Path:
        pack = tmp_path / f"pack-{language}"
        shutil.copytree(pack_dir, pack)
        manifest = json.loads((pack / "pack.json").read_text(encoding="utf-8"))
        manifest["source"]["language"] = language
        from pocketcli.packs.manifest import seal

        (pack / "pack.json").write_text(json.dumps(seal(manifest)), encoding="utf-8")
        return pack

    return make


# Tests marked slow (a Ray cluster, a headless browser, thirty racing signal runs...) get
# three times the global per-test timeout (pyproject.toml: 300 s), unless they name their own.
SLOW_TIMEOUT = 900


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("slow") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(SLOW_TIMEOUT))
