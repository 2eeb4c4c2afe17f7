"""Shared fixtures: the committed tiny model (see scripts/make_fixture_pack.py)."""

from __future__ import annotations

import json
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
