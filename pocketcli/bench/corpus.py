"""Benchmark phrase lists: the shipped MiniMax English set, or any text file.

A corpus file holds one phrase per line; empty lines and lines starting with
``#`` are skipped (FluidAudio's rule). Lines fetched from the MiniMax dataset
itself carry a ``<cloning_audio>|`` prefix, removed when fetched.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from pocketcli.errors import UnknownNameError, UserError

# The MiniMax dataset revision FluidAudio pins for its corpus.
MINIMAX_REPO = "MiniMaxAI/TTS-Multilingual-Test-Set"
MINIMAX_REVISION = "cb416f0ac3658da0577e97873065e19fe6488917"
MINIMAX_LANGUAGES = (
    "arabic",
    "cantonese",
    "chinese",
    "czech",
    "dutch",
    "english",
    "finnish",
    "french",
    "german",
    "greek",
    "hindi",
    "indonesian",
    "italian",
    "japanese",
    "korean",
    "polish",
    "portuguese",
    "romanian",
    "russian",
    "spanish",
    "thai",
    "turkish",
    "ukrainian",
    "vietnamese",
)


def parse_corpus(text: str) -> list[str]:
    return [
        line.strip()
        for line in text.splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]


def corpus_dir() -> Path:
    """Where ``pockettts corpus`` stores fetched corpora: in the store's cache folder."""
    from pocketcli.store.paths import store_dir

    return store_dir() / "corpora"


def load_corpus(name: str | None = None, path: Path | None = None) -> list[str]:
    if path is not None:
        try:
            return parse_corpus(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise UserError(f"cannot read corpus {path}: {exc}") from None
    name = name or "minimax-english"
    shipped = resources.files("pocketcli") / "data" / "corpora" / f"{name}.txt"
    if shipped.is_file():
        return parse_corpus(shipped.read_text(encoding="utf-8"))
    fetched = corpus_dir() / f"{name}.txt"
    if fetched.is_file():
        return parse_corpus(fetched.read_text(encoding="utf-8"))
    language = name.removeprefix("minimax-")
    if name.startswith("minimax-") and language in MINIMAX_LANGUAGES:
        raise UserError(
            f"corpus {name!r} is not here yet: fetch it with"
            f" `pockettts corpus --languages {language}`"
        )
    valid = tuple(f"minimax-{x}" for x in MINIMAX_LANGUAGES)
    raise UnknownNameError(
        "corpus", name, valid, "(or give a phrase file with {corpus_path})", ("corpus_path",)
    )
