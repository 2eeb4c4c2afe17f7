"""Text <-> token id conversion for the model's lookup-table conditioner.

Kyutai ships the vocabulary either as a SentencePiece `.model` or as a
Hugging Face `tokenizer.json`. Both are wrapped behind one small protocol and
called exactly the way pocket-tts calls them (plain `encode`/`decode`, the
library defaults otherwise), so the ids are the ones the model was trained on.
"""

from __future__ import annotations

from collections.abc import Sequence
from os import PathLike
from pathlib import Path
from typing import Protocol, runtime_checkable

import sentencepiece
import tokenizers

from pocketcli.errors import TokenizerError as TokenizerError  # defined there; re-exported

__all__ = [
    "JsonTokenizer",
    "SentencePieceTokenizer",
    "Tokenizer",
    "TokenizerError",
    "load_tokenizer",
]

_JSON_KINDS = frozenset({"tokenizers", "json"})
_SENTENCEPIECE_KINDS = frozenset({"sentencepiece"})


@runtime_checkable
class Tokenizer(Protocol):
    """What the text front-end needs from a tokenizer."""

    @property
    def vocab_size(self) -> int:
        """Number of ids, which must equal the model's `n_bins`."""
        ...

    def encode(self, text: str) -> list[int]:
        """Token ids of `text`."""
        ...

    def decode(self, ids: Sequence[int]) -> str:
        """Text of `ids`; the chunker relies on it to cut at sentence marks."""
        ...


class SentencePieceTokenizer:
    """A SentencePiece model (`.model` file or its serialized bytes)."""

    def __init__(self, processor: sentencepiece.SentencePieceProcessor) -> None:
        self._processor = processor

    @classmethod
    def from_file(cls, path: str | PathLike[str]) -> SentencePieceTokenizer:
        """Load a `.model` file."""
        return cls.from_bytes(Path(path).read_bytes())

    @classmethod
    def from_bytes(cls, data: bytes) -> SentencePieceTokenizer:
        """Load from the model's bytes, e.g. embedded in another file or sent to a worker."""
        processor = sentencepiece.SentencePieceProcessor()
        processor.LoadFromSerializedProto(data)
        return cls(processor)

    def to_bytes(self) -> bytes:
        """The serialized model, to rebuild the tokenizer elsewhere with `from_bytes`."""
        return self._processor.serialized_model_proto()

    @property
    def vocab_size(self) -> int:
        return self._processor.vocab_size()

    def encode(self, text: str) -> list[int]:
        return self._processor.encode(text, out_type=int)

    def decode(self, ids: Sequence[int]) -> str:
        return self._processor.decode(list(ids))

    def pieces(self, text: str) -> tuple[list[int], list[tuple[int, int]], list[str], str]:
        """Ids, each token's ``(begin, end)`` in ``text``'s UTF-8 bytes, the pieces, "byte"."""
        got = self._processor.encode(text, return_type="offset_mapping", return_bytes=True)
        pieces = [p.decode("utf-8", "replace") for p in got["pieces"]]
        return list(got["ids"]), [tuple(o) for o in got["offsets"]], pieces, "byte"

    def __repr__(self) -> str:
        return f"SentencePieceTokenizer(vocab_size={self.vocab_size})"


class JsonTokenizer:
    """A Hugging Face `tokenizers` definition (`tokenizer.json`).

    Encoding uses the file's own pipeline, post-processor included, because
    that is what pocket-tts does: a file whose post-processor adds `<s>` gets
    that id in front of every encoding, here as there.
    """

    def __init__(self, tokenizer: tokenizers.Tokenizer) -> None:
        self._tokenizer = tokenizer

    @classmethod
    def from_file(cls, path: str | PathLike[str]) -> JsonTokenizer:
        """Load a `tokenizer.json` file."""
        return cls.from_str(Path(path).read_text(encoding="utf-8"))

    @classmethod
    def from_str(cls, definition: str) -> JsonTokenizer:
        """Load from the JSON text itself."""
        return cls(tokenizers.Tokenizer.from_str(definition))

    @classmethod
    def from_bytes(cls, data: bytes) -> JsonTokenizer:
        """Load from the UTF-8 bytes of the JSON text."""
        return cls.from_str(data.decode("utf-8"))

    def to_bytes(self) -> bytes:
        """The JSON definition, to rebuild the tokenizer elsewhere with `from_bytes`."""
        return self._tokenizer.to_str().encode("utf-8")

    @property
    def vocab_size(self) -> int:
        return self._tokenizer.get_vocab_size()

    def encode(self, text: str) -> list[int]:
        return self._tokenizer.encode(text).ids

    def decode(self, ids: Sequence[int]) -> str:
        return self._tokenizer.decode(list(ids))

    def pieces(self, text: str) -> tuple[list[int], list[tuple[int, int]], list[str], str]:
        """Ids, each token's ``(begin, end)`` in ``text``'s characters, the pieces, "char"."""
        got = self._tokenizer.encode(text)
        return list(got.ids), [tuple(o) for o in got.offsets], list(got.tokens), "char"

    def __repr__(self) -> str:
        return f"JsonTokenizer(vocab_size={self.vocab_size})"


def _resolve_kind(path: Path, kind: str | None) -> str:
    """Pick the backend the way pocket-tts does: a `.json` file is always `tokenizers`."""
    if kind is not None:
        normalised = kind.strip().lower()
        if normalised not in _JSON_KINDS | _SENTENCEPIECE_KINDS:
            raise TokenizerError(
                f"unknown tokenizer kind {kind!r} for {path}: "
                "expected 'sentencepiece' or 'tokenizers'"
            )
        if normalised in _JSON_KINDS:
            return "tokenizers"
    # Released configs may say "sentencepiece" while pointing at a tokenizer.json;
    # the reference then goes by the file name, and so do we.
    if path.suffix.lower() == ".json":
        return "tokenizers"
    return "sentencepiece"


def load_tokenizer(
    path: str | PathLike[str],
    kind: str | None = None,
    *,
    vocab_size: int | None = None,
) -> Tokenizer:
    """Load a tokenizer file, choosing the backend by `kind` or else by suffix.

    `kind` is the `flow_lm.lookup_table.tokenizer` value of a config
    ("sentencepiece" or "tokenizers"). Pass `vocab_size` (the config's
    `n_bins`) to check that the file belongs to the model. Every failure is a
    `TokenizerError` naming the file.
    """
    file = Path(path)
    if not file.exists():
        raise TokenizerError(f"tokenizer file not found: {file}")
    if not file.is_file():
        raise TokenizerError(f"tokenizer path is not a file: {file}")

    backend = _resolve_kind(file, kind)
    tokenizer: Tokenizer
    try:
        if backend == "tokenizers":
            tokenizer = JsonTokenizer.from_file(file)
        else:
            tokenizer = SentencePieceTokenizer.from_file(file)
    except Exception as exc:  # the libraries raise assorted exception types
        raise TokenizerError(f"cannot load {file} as a {backend} tokenizer: {exc}") from exc

    if vocab_size is not None and tokenizer.vocab_size != vocab_size:
        raise TokenizerError(
            f"{file} has {tokenizer.vocab_size} tokens but the model expects {vocab_size}"
        )
    return tokenizer
