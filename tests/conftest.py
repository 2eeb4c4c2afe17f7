"""Shared fixtures: the committed tiny model (see scripts/make_fixture_pack.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

FIXTURE = Path(__file__).parent / "fixtures" / "tiny"


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
