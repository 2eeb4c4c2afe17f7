"""Where a text is cut into chunks when a period meets a digit, normalisation off.

A period between two digits ("3.5") is no sentence end; a period that ends a sentence and
is followed by one that starts with a digit ("noon. 5 people") is. The raw text goes
straight to the chunker (``normalize=False``), as pocket-tts takes it.
"""

from __future__ import annotations

import pytest

from pocketcli import PocketTTS
from pocketcli.text import load_tokenizer, split_into_chunks
from pocketcli.text.chunking import ChunkPlan

CASES = {
    "The meeting ended at noon. 5 people stayed.": [
        "The meeting ended at noon.",
        "5 people stayed.",
    ],
    "It costs 3.5 dollars. 4 people paid.": ["It costs 3.5 dollars.", "4 people paid."],
    "The war ended in 1945. Then peace came.": ["The war ended in 1945.", "Then peace came."],
    "Room 12 is full. 30 chairs. Version 2.0 ships.": [
        "Room 12 is full.",
        "30 chairs.",
        "Version 2.0 ships.",
    ],
    # Only a period makes a decimal point: a digit, "!" and a digit is still a sentence end.
    "We scored 3! 5 more came.": ["We scored 3!", "5 more came."],
}


@pytest.fixture(scope="module")
def tts(pack_dir) -> PocketTTS:
    return PocketTTS.open(runtime="onnx", model_dir=pack_dir)


@pytest.mark.parametrize("text", sorted(CASES))
def test_a_sentence_starting_with_a_digit_is_its_own_chunk(tts: PocketTTS, text: str) -> None:
    # Room for the longest sentence, not for two: every sentence end is a cut.
    room = max(
        p.n_tokens for sentence in CASES[text] for p in tts.script(sentence, normalize=False)
    )
    script = tts.script(text, normalize=False, max_tokens=room)
    assert all(isinstance(p, ChunkPlan) for p in script)
    assert [p.text.strip() for p in script] == CASES[text]


@pytest.mark.oracle
@pytest.mark.parametrize("text", sorted(CASES))
def test_the_cuts_are_pocket_tts_s(pack_dir, text: str) -> None:
    pytest.importorskip("torch")
    chunking = pytest.importorskip("pocket_tts.models.text_chunking")
    conditioner = pytest.importorskip("pocket_tts.modules.text_conditioner")
    path = pack_dir / "tokenizer.model"
    ours = load_tokenizer(path)
    theirs = conditioner.SentencePieceTokenizer(ours.vocab_size, str(path))
    for max_tokens in (1, 8):
        expected = chunking.split_into_best_sentences(theirs, text, max_tokens, False, False)
        assert split_into_chunks(ours, text, max_tokens=max_tokens) == expected
    assert len(split_into_chunks(ours, text, max_tokens=1)) == len(CASES[text])
