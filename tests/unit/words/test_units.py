"""The text side of word timings: words, units and the token map (pocket-tts-timestamped's
rules; the oracle test checks them end to end, these name each rule)."""

from __future__ import annotations

import numpy as np
import pytest

from pocketcli.config import ConfigError, ModelConfig, read_yaml
from pocketcli.text import load_tokenizer
from pocketcli.words import UnitMaker, chunk_units
from pocketcli.words.align import ChunkAligner, is_voiced, unit_scores
from pocketcli.words.units import source_words
from tests.support.paths import DATA, TINY

TOKENIZER = DATA / "tokenizer-en" / "tokenizer.model"


def test_words_join_across_apostrophes_and_hyphens_only_before_a_letter() -> None:
    words = [w.text for w in source_words("Don't stop - twenty-one, rock'n'roll' café…")]
    assert words == ["Don't", "stop", "twenty-one", "rock'n'roll", "café"]


def test_a_period_the_preparation_added_is_not_the_users() -> None:
    maker = UnitMaker("hello there")
    units = maker.units("Hello there.", [(0, 5), (5, 11), (11, 12)], "char")
    assert [(u.begin, u.end, u.word is not None, u.added) for u in units.units] == [
        (0, 5, True, False),
        (6, 11, True, False),
        (11, 12, False, True),
    ]
    user = UnitMaker("hello there.").units("Hello there.", [(0, 12)], "char")
    assert [u.added for u in user.units] == [False, False, False]


def test_a_token_is_shared_between_the_units_it_overlaps() -> None:
    units = UnitMaker("ab cd").units("ab cd", [(0, 5)], "char")
    np.testing.assert_allclose(units.token_to_unit, [[0.5, 0.5]])


def test_offsets_of_sentencepiece_are_bytes() -> None:
    tokenizer = load_tokenizer(TOKENIZER)
    units = chunk_units(UnitMaker("Café au lait"), "Café au lait", tokenizer)
    # every token lies in one word: each row is one 1.0
    assert np.array_equal(units.token_to_unit.sum(axis=1), np.ones(units.token_to_unit.shape[0]))
    assert [u.word.text for u in units.units if u.word] == ["Café", "au", "lait"]
    rows = units.token_to_unit.argmax(axis=1)
    assert list(rows) == sorted(rows) and set(rows) == {0, 1, 2}


def test_words_the_chunk_does_not_say_are_left_untimed() -> None:
    maker = UnitMaker("one two three")
    units = maker.units("One, Two and three.", [(0, 19)], "char")
    assert [u.word.text for u in units.units if u.word] == ["one", "two", "three"]
    assert [(u.begin, u.end) for u in units.units if u.word is None and u.added][0] == (9, 12)


def test_the_next_word_taking_over_ends_a_word() -> None:
    maker = UnitMaker("a b c")
    chunk = maker.units("a b c", [(0, 1), (2, 3), (4, 5)], "char")
    aligner = ChunkAligner(chunk)
    assert aligner.frame(np.array([0.8, 0.1, 0.1]), True, 0.0) == []  # opens "a"
    assert aligner.frame(np.array([0.5, 0.4, 0.1]), True, 0.08) == []
    ended = aligner.frame(np.array([0.3, 0.5, 0.2]), True, 0.16)
    assert [(w.word, w.start, w.end) for w in ended] == [("a", 0.0, 0.16)]
    # "b" below 0.001 and nothing later above it: it stays; then "c" passes it
    assert aligner.frame(np.array([0.0, 0.0005, 0.0004]), True, 0.24) == []
    ended = aligner.frame(np.array([0.0, 0.0002, 0.0009]), True, 0.32)
    assert [w.word for w in ended] == ["b"]
    assert [w.word for w in aligner.finish(0.4)] == ["c"]


def test_silence_ends_the_last_word_unless_the_user_punctuated_after_it() -> None:
    for source, ends in (("a b", True), ("a b!", False)):
        chunk = UnitMaker(source).units("a b!", [(0, 1), (2, 3), (3, 4)], "char")
        aligner = ChunkAligner(chunk)
        aligner.frame(np.array([0.9, 0.1, 0.0]), True, 0.0)
        aligner.frame(np.array([0.1, 0.9, 0.0]), True, 0.08)  # "b" open
        assert bool(aligner.frame(np.array([0.1, 0.9, 0.0]), False, 0.16)) is ends


def test_voiced_is_an_rms_above_a_thousandth() -> None:
    assert is_voiced(np.full(1920, 0.0011, np.float32))
    assert not is_voiced(np.full(1920, 0.0009, np.float32))
    assert not is_voiced(np.zeros(0, np.float32))


def test_scores_average_each_heads_softmax_over_the_text() -> None:
    logits = np.array([[0.0, np.log(3.0)], [0.0, 0.0]], np.float32)
    np.testing.assert_allclose(unit_scores(logits, np.eye(2, dtype=np.float32)), [0.375, 0.625])


def test_bundled_configs_carry_the_forks_heads_and_english_has_none() -> None:
    configs = TINY.parent.parent.parent / "pocketcli" / "data" / "configs"
    assert ModelConfig.from_yaml(configs / "french.yaml").flow_lm.timestamp_heads == ((3, 9),)
    deep = ModelConfig.from_yaml(configs / "english_2026-09_24l.yaml").flow_lm
    assert deep.timestamp_heads == ((14, 10), (17, 11), (15, 4))
    assert ModelConfig.from_yaml(configs / "english.yaml").flow_lm.timestamp_heads is None


@pytest.mark.parametrize(
    ("heads", "says"),
    [
        ([], "at least one"),
        ([{"layer": 2, "head": 0}], "outside the FlowLM's 2 layers of 4 heads"),
        ([{"layer": 0, "head": 1}, {"layer": 0, "head": 1}], "layer 0 head 1 twice"),
        ([{"layer": 0}], "not a {layer, head} pair"),
    ],
)
def test_a_bad_head_list_is_one_line(heads, says) -> None:
    config = read_yaml(TINY / "config.yaml")
    config["timestamp_heads"] = heads
    with pytest.raises(ConfigError) as err:
        ModelConfig.from_dict(config)
    assert says in str(err.value) and "\n" not in str(err.value)


def test_a_later_word_ends_a_word_only_once_its_own_score_is_below_a_thousandth() -> None:
    chunk = UnitMaker("a b c").units("a b c", [(0, 1), (2, 3), (4, 5)], "char")
    aligner = ChunkAligner(chunk)
    aligner.frame(np.array([0.9, 0.05, 0.05]), True, 0.0)  # opens "a"
    assert aligner.frame(np.array([0.005, 0.001, 0.994]), True, 0.08) == []
    ended = aligner.frame(np.array([0.0005, 0.0001, 0.9994]), True, 0.16)
    assert [(w.word, w.end) for w in ended] == [("a", 0.16)]
    assert aligner.open == 1  # "b" opens next, even though "c" has the attention


def test_cues_hold_seven_words_or_three_and_a_half_seconds() -> None:
    from pocketcli.words.align import Word
    from pocketcli.words.captions import captions, cues

    words = [Word(f"w{i}", 0.08 * i, 0.08 * (i + 1), i) for i in range(15)]
    assert [c[2].split()[0] for c in cues(words)] == ["w0", "w7", "w14"]
    slow = [Word(f"w{i}", 1.6 * i, 1.6 * i + 1.5, i) for i in range(3)]
    assert [c[2] for c in cues(slow)] == ["w0 w1", "w2"]
    assert captions(slow, "srt").startswith("1\n00:00:00,000 --> 00:00:03,100\nw0 w1\n\n2\n")
    assert captions(slow, "vtt").startswith("WEBVTT\n\n00:00:00.000 --> 00:00:03.100\nw0 w1\n")
