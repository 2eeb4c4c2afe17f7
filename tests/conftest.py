"""Shared fixtures: the committed tiny model (see scripts/make_fixture_pack.py)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.support.paths import FIXTURES

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
        (pack / "pack.json").write_text(json.dumps(manifest), encoding="utf-8")
        return pack

    return make
