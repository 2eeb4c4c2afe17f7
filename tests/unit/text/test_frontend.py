"""Tests of the text front-end (rules, preparation, tokenizers, chunking).

Tests marked `oracle` run Kyutai's pocket-tts 4.0.1 on the same inputs and
tokenizer files and require identical chunk texts, token ids and frame
budgets; they are skipped when pocket-tts (and torch) are not installed.
The other tests check properties and hand-derived values and need neither.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from dataclasses import FrozenInstanceError, astuple
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import pocketcli
from pocketcli.text import (
    ChunkPlan,
    EmptyTextError,
    JsonTokenizer,
    PreparedText,
    SentencePieceTokenizer,
    TextRules,
    Tokenizer,
    TokenizerError,
    load_tokenizer,
    max_generation_frames,
    plan_chunks,
    prepare_text,
    split_into_chunks,
)
from tests.support.paths import DATA, FIXTURES

TOKENIZER_DIR = DATA / "tokenizer-en"
TOKENIZER_FILES = {
    "model": TOKENIZER_DIR / "tokenizer.model",
    "json": TOKENIZER_DIR / "tokenizer.json",
}
CORPUS = Path(pocketcli.__file__).parent / "data" / "corpora" / "minimax-english.txt"


def read_phrases(path: Path) -> list[str]:
    """Phrases of a corpus file: skip `#` comments and blanks, drop an `id|` prefix."""
    phrases = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        phrases.append(line.split("|", 1)[1] if "|" in line else line)
    return phrases


MINIMAX = read_phrases(CORPUS)

_WORDS = ["river", "stone", "lantern", "quietly", "seven", "orange", "harbor", "whisper"]
_WORDS += ["candle", "north"]
_LONG_WITH_COMMAS = (
    ", ".join(
        f"the {w} near the old {v} was counted twice"
        for w, v in zip(_WORDS, reversed(_WORDS), strict=True)
    )
    + "."
)
_LONG_WITHOUT_COMMAS = (
    " ".join(
        f"the {w} near the old {v} was counted twice"
        for w, v in zip(_WORDS, reversed(_WORDS), strict=True)
    )
    + "."
)
_TWO_THOUSAND_WORDS = " ".join(_WORDS[(i * 7) % len(_WORDS)] for i in range(2000))

HARD_CASES: dict[str, str] = {
    "abbrev_dr": "Dr. Smith went to Washington with Mrs. Jones.",
    "abbrev_eg_ie": "Bring fruit, e.g. apples, i.e. the red ones, etc. and so on.",
    "abbrev_usa": "The U.S.A. is big. The U.K. is not.",
    "abbrev_pm": "Mr. and Mrs. Smith vs. Jones Inc. met at 5 p.m. sharp.",
    "decimal": "It costs 3.5 dollars.",
    "decimal_percent": "Growth was 10.25% last year, up from 9.75%.",
    "version_and_date": "Version 2.0.1 shipped on 12.05.2024 at last.",
    "decimal_then_space": "I counted 3. 5 people came later.",
    "decimal_sentences": "Pi is about 3.14159. Euler's number is 2.71828. Both matter.",
    "decimal_before_stop": "Use version 3.5. Next sentence here.",
    "numbered_periods": "123. 456. 789.",
    "straight_quotes": 'She said "hello." Then she left the room.',
    "curly_quotes": "He said \u201cI\u2019m fine.\u201d And walked away \u2018slowly\u2019.",
    "nested_closers": 'He finally said (after a pause "yes!")',
    "quote_question_comma": '"Hi?", she said. "Bye!", he replied.',
    "guillemets": "\u00abBonjour\u00bb, dit-il, \u00abcomment \u00e7a va\u00bb",
    "only_closers": "\"')",
    "long_commas": _LONG_WITH_COMMAS,
    "long_no_commas": _LONG_WITHOUT_COMMAS,
    "long_mixed": _LONG_WITH_COMMAS + " Short one. " + _LONG_WITHOUT_COMMAS,
    "two_thousand_words": _TWO_THOUSAND_WORDS,
    "emoji": "I love pizza \U0001f355\U0001f355! Do you? \U0001f600",
    "cjk": "東京は日本の首都です。大阪も大きい。",
    "arabic": "مرحبا بالعالم. كيف حالك؟",
    "cyrillic": "Привет, мир. Как дела?",
    "empty": "",
    "whitespace_only": "   \n\t  \r\n  ",
    "ellipsis_dots": "Well... I don't know... maybe.",
    "ellipsis_char": "Wait\u2026 what\u2026",
    "only_dots": "...",
    "trailing_dash": "And then -",
    "trailing_em_dash": "It was great \u2014",
    "trailing_en_dash": "From 1990 to \u2013",
    "trailing_comma_in_quote": '"Come here,"',
    "semicolons": "First; second; third; fourth and fifth",
    "semicolons_long": "; ".join(f"clause {w} goes on for a while" for w in _WORDS),
    "colon_times": "The time is 10:30; the score was 3:2, final.",
    "lowercase_no_punct": "lowercase start with no punctuation",
    "short": "hi",
    "single_letter": "a",
    "sharp_s": "\u00df is a letter",
    "newlines": "Line one\nLine two\r\nLine three\n\nLine four",
    "many_spaces": "Multiple   spaces    here.  And   more.",
    "tabs": "\tindented\ttext\there",
    "mixed_marks": "Really?!? Yes!!! No...",
    "padded_short_sentences": "Yes. No. Maybe so. Fine.",
    "nbsp_zero_width": "Ten\u00a0thousand people\u200bcame.",
    "brackets": "[Applause] (laughs) Thank you.",
    "unicode_digit": "Chapter \u0663. \u0664 items remain.",
    # Each closing mark after a sentence or pause mark, at the very end.
    "closer_curly_double": "She whispered \u201cgood night.\u201d",
    "closer_curly_single": "He called it \u2018done,\u2019",
    "closer_guillemet_bang": "Il a dit \u00abBonjour!\u00bb",
    "closer_guillemet_comma": "Elle a cri\u00e9 \u00abAttends,\u00bb",
    "closer_paren": "The result (see above.)",
    "closer_bracket": "They wrote [sic,]",
    "closer_straight_single": "He said 'fine?'",
    # A run of spaces before an overlong sentence: its token count in context
    # (kept when it has no comma to split at) exceeds its count on its own.
    "space_run_long_sentence": "Hi." + " " * 7 + "the river near the old north was counted. yes",
}

EMPTY_CASES = {"empty", "whitespace_only"}

RULE_SETS: dict[str, TextRules] = {
    "default": TextRules(),
    # Shaped like the French config: semicolons and quotes rewritten.
    "french_like": TextRules(
        remove_semicolons=True,
        replace_characters={
            '"': "",
            "\u201c": "",
            "\u201d": "",
            "\u00ab": "",
            "\u00bb": "",
            "\u2019": "'",
            "\u2018": "'",
            ":": ",",
            "(": "",
            ")": "",
            "[": "",
            "]": "",
            "\u2013": ",",
        },
    ),
    "padded_raw": TextRules(
        pad_with_spaces_for_short_inputs=True,
        append_terminal_punctuation=False,
        capitalize_first_letter=False,
        model_recommended_frames_after_eos=4,
    ),
}


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module", params=sorted(TOKENIZER_FILES))
def tokenizer(request: pytest.FixtureRequest) -> Tokenizer:
    return load_tokenizer(TOKENIZER_FILES[request.param])


@pytest.fixture(scope="module")
def sp_tokenizer() -> Tokenizer:
    return load_tokenizer(TOKENIZER_FILES["model"])


@pytest.fixture(scope="module")
def json_tokenizer() -> Tokenizer:
    return load_tokenizer(TOKENIZER_FILES["json"])


@pytest.fixture(scope="module")
def reference() -> SimpleNamespace:
    """The reference implementation's modules, or skip without pocket-tts/torch."""

    # ImportError too, not only a missing module: a broken torch install also skips.
    def need(name: str) -> Any:
        return pytest.importorskip(name, exc_type=ImportError)

    need("pocket_tts")
    chunking = need("pocket_tts.models.text_chunking")
    conditioner = need("pocket_tts.modules.text_conditioner")
    tts_model = need("pocket_tts.models.tts_model")
    config = need("pocket_tts.utils.config")
    return SimpleNamespace(
        chunking=chunking, conditioner=conditioner, TTSModel=tts_model.TTSModel, config=config
    )


@pytest.fixture(scope="module", params=sorted(TOKENIZER_FILES))
def pair(request: pytest.FixtureRequest, reference: SimpleNamespace) -> tuple[Tokenizer, Any]:
    """Our tokenizer and the reference's, both loaded from the same file."""
    path = TOKENIZER_FILES[request.param]
    theirs_cls = {
        "model": reference.conditioner.SentencePieceTokenizer,
        "json": reference.conditioner.JsonTokenizer,
    }[request.param]
    ours = load_tokenizer(path)
    return ours, theirs_cls(ours.vocab_size, str(path))


@pytest.fixture(scope="module")
def reference_frame_rate(reference: SimpleNamespace) -> float:
    english = Path(reference.config.CONFIGS_DIR) / "english.yaml"
    return reference.config.load_config(english).mimi.frame_rate


# --------------------------------------------------------------------------- oracle helpers


def outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    """('ok', result) or ('empty', None) when the call rejects the text."""
    try:
        return "ok", call()
    except EmptyTextError:
        return "empty", None
    except ValueError as exc:
        # Our code must raise EmptyTextError; the reference raises plain ValueError.
        if type(exc).__module__.startswith("pocketcli"):
            raise
        return "empty", None


def rule_kwargs(rules: TextRules) -> dict[str, Any]:
    """The reference's keyword arguments for the same rules."""
    return {
        "pad_with_spaces_for_short_inputs": rules.pad_with_spaces_for_short_inputs,
        "remove_semicolons": rules.remove_semicolons,
        "append_terminal_punctuation": rules.append_terminal_punctuation,
        "capitalize_first_letter": rules.capitalize_first_letter,
        "replace_characters": rules.replacements,
    }


def reference_plan(
    reference: SimpleNamespace,
    tokenizer: Any,
    text: str,
    rules: TextRules,
    max_tokens: int,
    frames_after_eos: int | None,
    frame_rate: float,
) -> list[tuple[str, tuple[int, ...], int, int]]:
    """Drive the reference `TTSModel.generate_audio_stream` text path without a model.

    A stand-in `self` records each (prompt, frames_after_eos) handed to the
    per-chunk generator; ids and the frame budget then come from the
    reference's own tokenizer call and `_estimate_max_gen_len`.
    """
    calls: list[tuple[str, int]] = []

    def record(**kwargs: Any) -> Iterator[Any]:
        calls.append((kwargs["text_to_generate"], kwargs["frames_after_eos"]))
        return iter(())

    model_cls = reference.TTSModel
    fake_model = SimpleNamespace(
        flow_lm=SimpleNamespace(conditioner=SimpleNamespace(tokenizer=tokenizer)),
        model_recommended_frames_after_eos=rules.model_recommended_frames_after_eos,
        _generate_audio_stream_short_text=record,
        _TOKENS_PER_SECOND_ESTIMATE=model_cls._TOKENS_PER_SECOND_ESTIMATE,
        _GEN_SECONDS_PADDING=model_cls._GEN_SECONDS_PADDING,
        config=SimpleNamespace(mimi=SimpleNamespace(frame_rate=frame_rate)),
        **rule_kwargs(rules),
    )
    list(
        model_cls.generate_audio_stream(
            fake_model,
            model_state=None,
            text_to_generate=text,
            max_tokens=max_tokens,
            frames_after_eos=frames_after_eos,
        )
    )
    plans = []
    for prompt, tail in calls:
        ids = tokenizer(prompt)  # what LUTConditioner.prepare feeds the model
        budget = model_cls._estimate_max_gen_len(fake_model, ids.shape[1])
        plans.append((prompt, tuple(ids[0].tolist()), budget, tail))
    return plans


def assert_same_plan(
    reference: SimpleNamespace,
    pair: tuple[Tokenizer, Any],
    text: str,
    rules: TextRules,
    max_tokens: int,
    frame_rate: float,
    frames_after_eos: int | None = None,
) -> None:
    ours, theirs = pair
    expected_chunks = outcome(
        lambda: reference.chunking.split_into_best_sentences(
            theirs, text, max_tokens, **rule_kwargs(rules)
        )
    )
    assert outcome(lambda: split_into_chunks(ours, text, rules, max_tokens)) == expected_chunks

    expected = outcome(
        lambda: reference_plan(
            reference, theirs, text, rules, max_tokens, frames_after_eos, frame_rate
        )
    )
    got = outcome(
        lambda: [astuple(p) for p in plan_chunks(ours, text, rules, max_tokens, frames_after_eos)]
    )
    assert got == expected


# --------------------------------------------------------------------------- oracle tests


@pytest.mark.oracle
@pytest.mark.parametrize("rules_name", sorted(RULE_SETS))
@pytest.mark.parametrize("case", sorted(HARD_CASES))
def test_prepare_text_matches_reference(
    reference: SimpleNamespace, case: str, rules_name: str
) -> None:
    text, rules = HARD_CASES[case], RULE_SETS[rules_name]
    expected = outcome(lambda: reference.chunking.prepare_text_prompt(text, **rule_kwargs(rules)))
    got = outcome(lambda: astuple(prepare_text(text, rules)))
    assert got == expected
    assert (expected[0] == "empty") == (case in EMPTY_CASES)


@pytest.mark.oracle
@pytest.mark.parametrize("max_tokens", [50, 12])
@pytest.mark.parametrize("rules_name", sorted(RULE_SETS))
@pytest.mark.parametrize("case", sorted(HARD_CASES))
def test_hard_cases_match_reference(
    reference: SimpleNamespace,
    pair: tuple[Tokenizer, Any],
    reference_frame_rate: float,
    case: str,
    rules_name: str,
    max_tokens: int,
) -> None:
    assert_same_plan(
        reference, pair, HARD_CASES[case], RULE_SETS[rules_name], max_tokens, reference_frame_rate
    )


@pytest.mark.oracle
@pytest.mark.parametrize("max_tokens", [50, 12])
@pytest.mark.parametrize("rules_name", sorted(RULE_SETS))
def test_minimax_phrases_match_reference(
    reference: SimpleNamespace,
    pair: tuple[Tokenizer, Any],
    reference_frame_rate: float,
    rules_name: str,
    max_tokens: int,
) -> None:
    assert len(MINIMAX) == 100
    for phrase in MINIMAX:
        assert_same_plan(
            reference, pair, phrase, RULE_SETS[rules_name], max_tokens, reference_frame_rate
        )


@pytest.mark.oracle
@pytest.mark.parametrize("max_tokens", [50, 12])
def test_whole_corpus_as_one_text_matches_reference(
    reference: SimpleNamespace,
    pair: tuple[Tokenizer, Any],
    reference_frame_rate: float,
    max_tokens: int,
) -> None:
    text = " ".join(MINIMAX)
    assert_same_plan(reference, pair, text, TextRules(), max_tokens, reference_frame_rate)


@pytest.mark.oracle
@pytest.mark.parametrize("frames_after_eos", [0, 7])
@pytest.mark.parametrize("rules_name", sorted(RULE_SETS))
def test_explicit_frames_after_eos_matches_reference(
    reference: SimpleNamespace,
    pair: tuple[Tokenizer, Any],
    reference_frame_rate: float,
    rules_name: str,
    frames_after_eos: int,
) -> None:
    text = HARD_CASES["padded_short_sentences"] + " " + MINIMAX[1]
    assert_same_plan(
        reference,
        pair,
        text,
        RULE_SETS[rules_name],
        12,
        reference_frame_rate,
        frames_after_eos=frames_after_eos,
    )


@pytest.mark.oracle
def test_rules_from_every_bundled_config_match_reference(reference: SimpleNamespace) -> None:
    yaml = pytest.importorskip("yaml")
    configs = sorted(Path(reference.config.CONFIGS_DIR).glob("*.yaml"))
    assert configs
    for path in configs:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        theirs = reference.config.load_config(path)
        ours = TextRules.from_config(raw)
        assert ours.pad_with_spaces_for_short_inputs == theirs.pad_with_spaces_for_short_inputs
        assert ours.remove_semicolons == theirs.remove_semicolons
        assert ours.append_terminal_punctuation == theirs.append_terminal_punctuation
        assert ours.capitalize_first_letter == theirs.capitalize_first_letter
        assert ours.replacements == theirs.replace_characters, path.name
        assert ours.model_recommended_frames_after_eos == theirs.model_recommended_frames_after_eos


@pytest.mark.oracle
def test_default_rules_equal_reference_defaults(reference: SimpleNamespace) -> None:
    defaults = {
        name: field.default
        for name, field in reference.config.Config.model_fields.items()
        if name in TextRules.__dataclass_fields__
    }
    assert len(defaults) == len(TextRules.__dataclass_fields__)
    assert TextRules().replacements == defaults.pop("replace_characters")
    for name, value in defaults.items():
        assert getattr(TextRules(), name) == value, name


@pytest.mark.oracle
@pytest.mark.parametrize("rules_name", ["english.yaml", "french.yaml", "german_24l.yaml"])
def test_minimax_with_bundled_config_rules_match_reference(
    reference: SimpleNamespace,
    pair: tuple[Tokenizer, Any],
    reference_frame_rate: float,
    rules_name: str,
) -> None:
    yaml = pytest.importorskip("yaml")
    path = Path(reference.config.CONFIGS_DIR) / rules_name
    rules = TextRules.from_config(yaml.safe_load(path.read_text(encoding="utf-8")))
    for phrase in MINIMAX[::3]:
        assert_same_plan(reference, pair, phrase, rules, 50, reference_frame_rate)


# --------------------------------------------------------------------------- tokenizers


def test_corpus_has_the_hundred_minimax_phrases() -> None:
    assert len(MINIMAX) == 100
    assert all(phrase.strip() == phrase and phrase for phrase in MINIMAX)


def test_both_files_load_as_tokenizers(sp_tokenizer: Tokenizer, json_tokenizer: Tokenizer) -> None:
    assert isinstance(sp_tokenizer, SentencePieceTokenizer)
    assert isinstance(json_tokenizer, JsonTokenizer)
    for tok in (sp_tokenizer, json_tokenizer):
        assert isinstance(tok, Tokenizer)
        assert tok.vocab_size == 4000


def test_sentencepiece_reproduces_published_tokenizations(sp_tokenizer: Tokenizer) -> None:
    """Ids dumped by a third party with the sentencepiece library (golem_cases_en.json)."""
    cases = json.loads((TOKENIZER_DIR / "golem_cases_en.json").read_text(encoding="utf-8"))
    assert cases["vocab_size"] == sp_tokenizer.vocab_size
    for case in cases["cases"]:
        assert sp_tokenizer.encode(case["text"]) == case["tokens"], case["text"]


def test_both_files_give_the_same_ids_on_minimax(
    sp_tokenizer: Tokenizer, json_tokenizer: Tokenizer
) -> None:
    """The .json export has the .model's vocabulary but a different pipeline.

    Its post-processor adds `<s>` (id 1) and it adds no word-start marker in
    front of the text, so the same ids appear only for `" " + text` behind the
    BOS. Raw encodings differ, exactly as they do in pocket-tts with these files.
    """
    bos = 1
    for phrase in MINIMAX:
        assert json_tokenizer.encode(" " + phrase) == [bos, *sp_tokenizer.encode(phrase)]


def test_decode_round_trips_minimax(tokenizer: Tokenizer) -> None:
    for phrase in MINIMAX:
        assert tokenizer.decode(tokenizer.encode(phrase)) == phrase


def test_tokenizers_rebuild_from_bytes(sp_tokenizer: Tokenizer, json_tokenizer: Tokenizer) -> None:
    assert isinstance(sp_tokenizer, SentencePieceTokenizer)
    assert isinstance(json_tokenizer, JsonTokenizer)
    rebuilt_sp = SentencePieceTokenizer.from_bytes(TOKENIZER_FILES["model"].read_bytes())
    rebuilt_json = JsonTokenizer.from_bytes(json_tokenizer.to_bytes())
    again_sp = SentencePieceTokenizer.from_bytes(sp_tokenizer.to_bytes())
    for phrase in MINIMAX[:20]:
        assert rebuilt_sp.encode(phrase) == sp_tokenizer.encode(phrase)
        assert again_sp.encode(phrase) == sp_tokenizer.encode(phrase)
        assert rebuilt_json.encode(phrase) == json_tokenizer.encode(phrase)


def test_load_tokenizer_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope" / "tokenizer.model"
    with pytest.raises(TokenizerError, match="not found") as info:
        load_tokenizer(missing)
    assert str(missing) in str(info.value)
    assert isinstance(info.value, ValueError)


def test_load_tokenizer_rejects_directory_and_unknown_kind(tmp_path: Path) -> None:
    with pytest.raises(TokenizerError, match="not a file"):
        load_tokenizer(tmp_path)
    with pytest.raises(TokenizerError, match="unknown tokenizer kind"):
        load_tokenizer(TOKENIZER_FILES["model"], kind="bpe")


@pytest.mark.parametrize("name", ["broken.model", "broken.json"])
def test_load_tokenizer_corrupt_file(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_bytes(b"\x00\x01 definitely not a tokenizer {")
    with pytest.raises(TokenizerError, match="cannot load"):
        load_tokenizer(path)


def test_load_tokenizer_kind_and_suffix(tmp_path: Path) -> None:
    model_copy = tmp_path / "vocab.bin"
    model_copy.write_bytes(TOKENIZER_FILES["model"].read_bytes())
    json_copy = tmp_path / "vocab.txt"
    json_copy.write_bytes(TOKENIZER_FILES["json"].read_bytes())
    assert isinstance(load_tokenizer(model_copy), SentencePieceTokenizer)
    assert isinstance(load_tokenizer(model_copy, "sentencepiece"), SentencePieceTokenizer)
    assert isinstance(load_tokenizer(json_copy, "tokenizers"), JsonTokenizer)
    assert isinstance(load_tokenizer(json_copy, "json"), JsonTokenizer)
    # As in pocket-tts, a .json file is read with `tokenizers` whatever the config says.
    assert isinstance(load_tokenizer(TOKENIZER_FILES["json"], "sentencepiece"), JsonTokenizer)
    with pytest.raises(TokenizerError, match="cannot load"):
        load_tokenizer(model_copy, "tokenizers")


def test_load_tokenizer_checks_vocab_size() -> None:
    assert load_tokenizer(TOKENIZER_FILES["model"], vocab_size=4000).vocab_size == 4000
    with pytest.raises(TokenizerError, match="expects 4096"):
        load_tokenizer(TOKENIZER_FILES["json"], vocab_size=4096)


# --------------------------------------------------------------------------- rules


def test_rules_from_config_defaults_and_values() -> None:
    assert TextRules.from_config({}) == TextRules()
    assert TextRules.from_config({"flow_lm": {"dim": 3}, "replace_characters": None}) == (
        TextRules()
    )
    rules = TextRules.from_config(
        {
            "remove_semicolons": True,
            "pad_with_spaces_for_short_inputs": True,
            "append_terminal_punctuation": False,
            "capitalize_first_letter": False,
            "replace_characters": {"\u2019": "'", '"': ""},
            "model_recommended_frames_after_eos": 5,
            "mimi": {"frame_rate": 12.5},
        }
    )
    assert rules.remove_semicolons and rules.pad_with_spaces_for_short_inputs
    assert not rules.append_terminal_punctuation and not rules.capitalize_first_letter
    assert rules.replacements == {"\u2019": "'", '"': ""}
    assert rules.model_recommended_frames_after_eos == 5


def test_rules_are_frozen_and_hashable() -> None:
    rules = TextRules(replace_characters={"a": "b"})
    assert hash(rules) == hash(TextRules(replace_characters=(("a", "b"),)))
    with pytest.raises(FrozenInstanceError):
        rules.remove_semicolons = True  # type: ignore[misc]


@pytest.mark.parametrize(
    "bad",
    [
        {"replace_characters": {"ab": "c"}},
        {"replace_characters": {"a": None}},
        {"replace_characters": [("a", "b"), ("a", "c")]},
        {"remove_semicolons": "yes"},
        {"model_recommended_frames_after_eos": 2.5},
    ],
)
def test_rules_reject_malformed_config(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        TextRules.from_config(bad)


# --------------------------------------------------------------------------- preparation


@pytest.mark.parametrize(
    ("text", "rules", "expected"),
    [
        ("hello world", TextRules(), PreparedText("Hello world.", 3)),
        ("one two three four five", TextRules(), PreparedText("One two three four five.", 1)),
        ("Wait,", TextRules(), PreparedText("Wait.", 3)),
        ("And then -", TextRules(), PreparedText("And then.", 3)),
        ('"Come here,"', TextRules(), PreparedText('"Come here."', 3)),
        ('She said "hi!"', TextRules(), PreparedText('She said "hi!"', 3)),
        ("He said (yes)", TextRules(), PreparedText("He said (yes).", 3)),
        ("a;b", TextRules(remove_semicolons=True), PreparedText("A,b.", 3)),
        ("a;b", TextRules(), PreparedText("A;b.", 3)),
        ("line\none", TextRules(), PreparedText("Line one.", 3)),
        ("x", TextRules(pad_with_spaces_for_short_inputs=True), PreparedText("        X.", 3)),
        ("\u00dfa", TextRules(), PreparedText("SSa.", 3)),
        (
            'x "Hi?", she said',
            TextRules(replace_characters={'"': ""}),
            PreparedText("X Hi? she said.", 3),
        ),
        (
            "lower case",
            TextRules(append_terminal_punctuation=False, capitalize_first_letter=False),
            PreparedText("lower case", 3),
        ),
    ],
)
def test_prepare_text_by_hand(text: str, rules: TextRules, expected: PreparedText) -> None:
    assert prepare_text(text, rules) == expected


@pytest.mark.parametrize("text", ["", "   ", "\n\n", " \t\r\n "])
def test_empty_text_raises(tokenizer: Tokenizer, text: str) -> None:
    with pytest.raises(EmptyTextError):
        prepare_text(text)
    with pytest.raises(EmptyTextError):
        split_into_chunks(tokenizer, text)
    with pytest.raises(ValueError):
        plan_chunks(tokenizer, text)


def test_text_emptied_by_replacements_raises() -> None:
    rules = TextRules(replace_characters={'"': "", "(": "", ")": ""})
    with pytest.raises(EmptyTextError):
        prepare_text(' "( )" ', rules)


# --------------------------------------------------------------------------- chunking


def test_max_generation_frames_by_hand() -> None:
    # ceil((n / 3 + 2) * 12.5)
    assert max_generation_frames(0) == 25
    assert max_generation_frames(3) == 38  # 37.5 rounds up
    assert max_generation_frames(6) == 50
    assert max_generation_frames(50) == math.ceil(50 / 3 * 12.5 + 25)
    assert max_generation_frames(3, frame_rate=25.0) == 75


def test_decimal_period_is_not_a_sentence_end(tokenizer: Tokenizer) -> None:
    chunks = split_into_chunks(tokenizer, "It costs 3.5 dollars. Then more.", max_tokens=1)
    assert chunks == ["It costs 3.5 dollars.", "Then more."]


def test_abbreviation_period_is_a_sentence_end(tokenizer: Tokenizer) -> None:
    assert split_into_chunks(tokenizer, "Dr. Smith arrived.", max_tokens=1) == [
        "Dr.",
        "Smith arrived.",
    ]


def test_overlong_sentence_falls_back_to_commas(tokenizer: Tokenizer) -> None:
    chunks = split_into_chunks(tokenizer, "one, two; three: four", max_tokens=1)
    assert chunks == ["One,", "two;", "three:", "four."]


def test_packing_keeps_sentences_whole_and_in_order(tokenizer: Tokenizer) -> None:
    text = " ".join(MINIMAX[:30])
    for max_tokens in (12, 50, 200):
        chunks = split_into_chunks(tokenizer, text, max_tokens=max_tokens)
        assert "".join("".join(chunks).split()) == "".join(prepare_text(text).text.split())
    assert len(split_into_chunks(tokenizer, text, max_tokens=12)) > len(
        split_into_chunks(tokenizer, text, max_tokens=200)
    )


def test_plan_chunks_ids_and_frames_after_eos(tokenizer: Tokenizer) -> None:
    text = "Yes. " + MINIMAX[1]
    plans = plan_chunks(tokenizer, text, max_tokens=12)
    assert len(plans) > 1
    for plan in plans:
        assert isinstance(plan, ChunkPlan)
        assert list(plan.token_ids) == tokenizer.encode(plan.text)
        assert plan.max_frames == max_generation_frames(plan.n_tokens)
        short = len(plan.text.split()) <= 4
        assert plan.frames_after_eos == (5 if short else 3)

    configured = TextRules(model_recommended_frames_after_eos=9)
    assert {p.frames_after_eos for p in plan_chunks(tokenizer, text, configured, 12)} == {9}
    explicit = plan_chunks(tokenizer, text, configured, 12, frames_after_eos=0)
    assert {p.frames_after_eos for p in explicit} == {0}


def test_plan_chunks_prepares_each_chunk_again(tokenizer: Tokenizer) -> None:
    rules = TextRules(pad_with_spaces_for_short_inputs=True)
    plans = plan_chunks(tokenizer, "Go. Stop now. " + MINIMAX[1], rules, max_tokens=12)
    padded = [p for p in plans if len(p.text.split()) < 5]
    assert padded and all(p.text.startswith(" " * 8) for p in padded)
    assert all(not p.text.startswith(" ") for p in plans if len(p.text.split()) >= 5)


@pytest.mark.oracle
@pytest.mark.parametrize(
    "text",
    [
        "It costs $5.",
        "First part. [pause:1s] Second part <b>bold</b>, 3rd of May!",
        "<speak>Not read as SSML</speak> when normalising is off.",
        MINIMAX[1] + " " + MINIMAX[2],
    ],
)
def test_script_without_normalising_is_the_reference_chunking(
    reference: SimpleNamespace, reference_frame_rate: float, text: str
) -> None:
    """``PocketTTS.script(normalize=False)`` (what ``--no-normalize`` speaks) against what
    pocket-tts's ``generate_audio_stream`` would speak: prompts, ids, budgets, tails.
    (No chunk here is over 50 tokens, where ours cuts at words and pocket-tts does not.)"""
    pack = FIXTURES / "tiny" / "pack"
    tts = pocketcli.PocketTTS.open(runtime="onnx", model_dir=pack)
    theirs = reference.conditioner.SentencePieceTokenizer(
        tts._tokenizer.vocab_size, str(TOKENIZER_FILES["model"])
    )
    expected = reference_plan(reference, theirs, text, tts._rules, 50, None, reference_frame_rate)
    script = tts.script(text, normalize=False, max_tokens=50)
    assert [astuple(item) for item in script] == expected
