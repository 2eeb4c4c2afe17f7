"""Captions keep the user's own words through normalisation (issue 35 item 4): ``tts '$5 and
3 cats' --words w.json`` gives ``$5``, ``and``, ``3``, ``cats``, each from the start of the
first word it is spoken as to the end of the last. The times are checked against the same
text already spoken out (``--no-normalize`` of what normalisation says: the same audio), its
spoken words put together per token by hand."""

from __future__ import annotations

import json

import pytest

from pocketcli import SpeakOptions
from pocketcli.normalize import normalize_text
from pocketcli.words.source import owners, user_tokens
from tests.support.cli import run

NO_EOS = ("--eos-threshold", "1000")
# (text, [(the user's token, the words it is spoken as)]); the spoken text is normalize_text's.
CASES = [
    ("It costs $5 and 3 cats.",
     [("It", "It"), ("costs", "costs"), ("$5", "five dollars"), ("and", "and"), ("3", "three"),
      ("cats", "cats")]),
    ("Dr. Smith lives on Main St. now.",
     [("Dr", "Doctor"), ("Smith", "Smith"), ("lives", "lives"), ("on", "on"),
      ("Main", "Main"), ("St", "Street"), ("now", "now")]),
    ("Visit example.com today.",
     [("Visit", "Visit"), ("example.com", "example dot com"), ("today", "today")]),
    ("Take 50% off the 2nd item.",
     [("Take", "Take"), ("50%", "fifty percent"), ("off", "off"), ("the", "the"),
      ("2nd", "second"), ("item", "item")]),
    ("We walked 12 km on Jan. 5.",
     [("We", "We"), ("walked", "walked"), ("12", "twelve"), ("km", "kilometers"),
      ("on", "on"), ("Jan", "January"), ("5", "fifth")]),
]  # fmt: skip


def _expected(spoken_rows: list[dict], tokens: list[tuple[str, str]]) -> list[dict]:
    """The spoken run's timed words, put together per token (words passed over skipped)."""
    owner = [(i, token, word) for i, (token, words) in enumerate(tokens) for word in words.split()]
    out: list[dict] = []
    at, last = 0, None
    for row in spoken_rows:
        while owner[at][2] != row["word"]:
            at += 1
        index, token, _ = owner[at]
        if index == last:
            out[-1]["end"] = row["end"]
        else:
            out.append({"word": token, "start": row["start"], "end": row["end"]})
        last, at = index, at + 1
    return out


@pytest.mark.parametrize(("text", "tokens"), CASES, ids=[c[0][:12] for c in CASES])
def test_words_are_the_users_tokens_timed_as_spoken(
    words_pack, words_tts, tmp_path, text: str, tokens: list[tuple[str, str]]
) -> None:
    spoken = normalize_text(text, "english")
    # No end of speech until the text's frames run out: every token is spoken.
    done = run("tts", text, "--model-dir", words_pack, "--seed", "3", "-q", *NO_EOS,
               "-o", tmp_path / "a.wav", "--words", tmp_path / "a.json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    got = json.loads((tmp_path / "a.json").read_text(encoding="utf-8"))
    said = words_tts.synthesize(
        spoken, None, SpeakOptions(seed=3, words=True, normalize=False, eos_threshold=1000.0)
    )
    spoken_rows = [
        {"word": w.word, "start": round(w.start, 3), "end": round(w.end, 3)} for w in said.words
    ]
    assert got == _expected(spoken_rows, tokens)
    assert [row["word"] for row in got] == [token for token, _ in tokens]
    for before, after in zip(got, got[1:], strict=False):
        assert before["start"] < before["end"] <= after["start"] < after["end"]


def test_tokens_across_a_pause_keep_their_own_words(words_pack, tmp_path) -> None:
    text = "It costs $5. [pause:500ms] Then 3 cats!"
    done = run("tts", text, "--model-dir", words_pack, "--seed", "3", "-q", *NO_EOS,
               "-o", tmp_path / "a.wav", "--words", "-")  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.decode().splitlines()]
    words = [r["word"] for r in rows]
    assert words == ["It", "costs", "$5", "Then", "3", "cats"]
    after = next(r for r in rows if r["word"] in ("Then", "3", "cats"))
    before = [r for r in rows if r["word"] in ("It", "costs", "$5")][-1]
    assert after["start"] - before["end"] >= 0.5 - 1e-3  # the pause is between them


def test_say_as_content_is_captioned_as_written(words_pack, tmp_path) -> None:
    """``<say-as>`` content is read by the SSML parser (not by normalisation): its
    captions are still what the user wrote inside it, over the words it is spoken as."""
    text = ('<speak><s>I have <say-as interpret-as="characters">ABC</say-as></s><s>And'
            ' <say-as interpret-as="cardinal">3</say-as> cats</s></speak>')  # fmt: skip
    done = run("tts", text, "--model-dir", words_pack, "--seed", "3", "-q", *NO_EOS,
               "-o", tmp_path / "a.wav", "--words", "-")  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert [r["word"] for r in rows] == ["I", "have", "ABC", "And", "3", "cats"]
    # the same speech, its words as spoken
    spoken = run("tts", "I have A B C. And three cats.", "--model-dir", words_pack,
                 "--seed", "3", "-q", *NO_EOS, "--no-normalize", "-o", tmp_path / "b.wav",
                 "--words", "-")  # fmt: skip
    assert spoken.returncode == 0, spoken.stderr
    said = [json.loads(line) for line in spoken.stdout.decode().splitlines()]
    letters = [r for r in said if r["word"] in ("A", "B", "C")]
    abc = rows[2]
    assert (abc["start"], abc["end"]) == (letters[0]["start"], letters[-1]["end"])


@pytest.mark.parametrize(
    ("written", "spoken", "owned"),
    [
        ("It costs $5 and 3 cats.", "It costs five dollars and three cats.",
         ["It", "costs", "$5", "$5", "and", "3", "cats"]),
        ("Call me at 5 pm, OK?", "Call me at five P M, OK?",  # 2 tokens, 3 words: as one
         ["Call", "me", "at", "5 pm", "5 pm", "5 pm", "OK"]),
        ("Hello & goodbye, (U.S.) e.g. friends.", "Hello and goodbye, (U.S.) for example friends.",
         ["Hello", "&", "goodbye", "U.S.", "U.S.", "e.g.", "e.g.", "friends"]),
    ],
)  # fmt: skip
def test_owners_of_the_spoken_words(written: str, spoken: str, owned: list[str]) -> None:
    def reading(token: str) -> str:
        return normalize_text(token, "english")

    found = owners(written, spoken, reading)
    assert [t.text if t is not None else None for t in found] == owned


def test_user_tokens_drop_the_punctuation_around_them() -> None:
    assert [t.text for t in user_tokens('"Dr. Smith," (U.S.) paid $5... e.g. ok!')] == [
        "Dr", "Smith", "U.S.", "paid", "$5", "e.g.", "ok",
    ]  # fmt: skip
