"""Where the repository's files are, for every test and helper (one place, not one
``Path(__file__).parent`` per file, so a test file can move without its paths breaking)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "pocketcli"
TESTS = ROOT / "tests"
DATA = TESTS / "data"
FIXTURES = TESTS / "fixtures"
TINY = FIXTURES / "tiny"
LOUD = FIXTURES / "loud"
SPEECH = DATA / "speech"
TOKENIZER_DIR = DATA / "tokenizer-en"
SUPPORT = TESTS / "support"
