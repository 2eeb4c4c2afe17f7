"""The browser pack's tokenizer.json (issue 32 item 8): ``export --format web`` of a
SentencePiece model writes the published layout, file for file, and ``tokenizers``
loading its tokenizer.json gives the SentencePiece model's ids.

Checked on the MiniMax English texts (the 100 phrases of pocketcli/data/corpora) with
Kyutai's real English tokenizer (tests/data/tokenizer-en, see its SOURCES.md) and with
the tiny model's, through a real export; plus the texts where the plain conversions
differ (``tokenizers``' own ``from_spm`` collapses a double space; a Metaspace
pre-tokenizer skips the dummy prefix of a text that starts with a space).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import sentencepiece
import tokenizers

from pocketcli.packs import web
from pocketcli.packs.web_tokenizer import sentencepiece_to_json
from tests.support.bundlehelp import TINY_TOKENIZER
from tests.support.paths import PACKAGE, TOKENIZER_DIR
from tests.support.webhelp import tiny_web_pack

CORPUS = PACKAGE / "data" / "corpora" / "minimax-english.txt"
EDGES = [" leading space", "two  spaces", "trailing ", "tab\tand\nnewline", "", " ",
         "emoji 😀 and 日本語 by bytes", "Dr. Smith paid $5.50 on 3/4/2025."]  # fmt: skip


def minimax_english() -> list[str]:
    lines = CORPUS.read_text(encoding="utf-8").splitlines()
    texts = [line for line in lines if line.strip() and not line.startswith("#")]
    assert len(texts) == 100
    return texts


def assert_same_ids(json_text: str, model: Path) -> None:
    ours = tokenizers.Tokenizer.from_str(json_text)
    sp = sentencepiece.SentencePieceProcessor(model_file=str(model))
    assert ours.get_vocab_size() == sp.get_piece_size()
    assert [ours.id_to_token(i) for i in range(sp.get_piece_size())] == [
        sp.id_to_piece(i) for i in range(sp.get_piece_size())
    ]
    for text in minimax_english() + EDGES:
        assert ours.encode(text).ids == sp.encode(text), text
        assert ours.decode(sp.encode(text)) == sp.decode(sp.encode(text)), text


def test_kyutais_english_tokenizer_converts_to_the_same_ids() -> None:
    assert_same_ids(
        sentencepiece_to_json(TOKENIZER_DIR / "tokenizer.model"), TOKENIZER_DIR / "tokenizer.model"
    )


def test_the_exported_browser_pack_has_the_published_files_and_the_same_ids() -> None:
    pack = tiny_web_pack()
    written = {str(p.relative_to(pack)) for p in pack.rglob("*") if p.is_file()}
    assert written == set(web.FILES)  # the published layout, file for file
    meta = json.loads((pack / web.CONFIG_FILE).read_text())
    assert meta["tokenizer_file"] == "tokenizer.json"
    assert_same_ids((pack / "tokenizer.json").read_text(encoding="utf-8"), TINY_TOKENIZER)


def test_a_file_that_is_no_sentencepiece_model_is_one_line(tmp_path) -> None:
    from pocketcli.errors import UserError

    bad = tmp_path / "tokenizer.model"
    bad.write_bytes(b"\xff" * 100)
    with pytest.raises(UserError) as info:
        sentencepiece_to_json(bad)
    assert str(bad) in str(info.value) and len(str(info.value).splitlines()) == 1


def test_the_pack_config_names_no_folder_of_this_machine(tmp_path) -> None:
    url = "hf://kyutai/x/tokenizer.model"
    source = {"config": str(tmp_path / "my.yaml"), "weights": str(tmp_path / "m.safetensors"),
              "tokenizer": url, "config_sha256": "ab"}  # fmt: skip
    kept = web.portable_source(source)
    assert kept == {"config": "my.yaml", "weights": "m.safetensors", "tokenizer": url,
                    "config_sha256": "ab"}  # fmt: skip
    assert os.fspath(tmp_path) not in json.dumps(kept)
