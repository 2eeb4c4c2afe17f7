"""Text front-end: normalisation, tokenization and chunking, as pocket-tts 4.0.1 does it.

Torch-free, so the ONNX/CoreML runtimes can share it; the outputs (chunk
texts, token ids, frame budgets) are meant to be identical to the reference.
"""

from pocketcli.text.chunking import (
    DEFAULT_FRAME_RATE,
    MAX_TOKENS_PER_CHUNK,
    ChunkPlan,
    max_generation_frames,
    plan_chunks,
    split_into_chunks,
)
from pocketcli.text.prepare import EmptyTextError, PreparedText, prepare_text
from pocketcli.text.rules import TextRules
from pocketcli.text.tokenizer import (
    JsonTokenizer,
    SentencePieceTokenizer,
    Tokenizer,
    TokenizerError,
    load_tokenizer,
)

__all__ = [
    "DEFAULT_FRAME_RATE",
    "MAX_TOKENS_PER_CHUNK",
    "ChunkPlan",
    "EmptyTextError",
    "JsonTokenizer",
    "PreparedText",
    "SentencePieceTokenizer",
    "TextRules",
    "Tokenizer",
    "TokenizerError",
    "load_tokenizer",
    "max_generation_frames",
    "plan_chunks",
    "prepare_text",
    "split_into_chunks",
]
