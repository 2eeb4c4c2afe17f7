"""Pauses and the SSML subset: exact lengths, caps, positions of errors, say-as and sub."""

from __future__ import annotations

import pytest

from pocketcli.normalize import (
    BREAK_STRENGTHS,
    DEFAULT_PAUSE_SECONDS,
    MarkupError,
    Pause,
    Speech,
    normalize_text,
    parse_markup,
)


def parse(text: str, **kwargs):
    warnings: list[str] = []
    items = parse_markup(text, on_warning=warnings.append, **kwargs)
    return items, warnings


@pytest.mark.parametrize(
    "marker, seconds",
    [
        ("[pause]", 0.5),
        ("[pause:500ms]", 0.5),
        ("[pause:1.5s]", 1.5),
        ("[pause:2]", 2.0),
        ("[PAUSE:250ms]", 0.25),
        ("[pause: 3 s]", 3.0),
        ("[pause:10s]", 10.0),
    ],
)
def test_inline_pauses_parse_to_exact_seconds(marker: str, seconds: float) -> None:
    items, warnings = parse(f"Hello. {marker} World.")
    assert items == [Speech("Hello."), Pause(seconds), Speech("World.")]
    assert warnings == []


def test_default_pause_is_half_a_second() -> None:
    assert DEFAULT_PAUSE_SECONDS == 0.5


def test_long_pause_is_capped_with_a_warning() -> None:
    items, warnings = parse("A [pause:15s] B")
    assert items == [Speech("A"), Pause(10.0), Speech("B")]
    assert len(warnings) == 1 and "15" in warnings[0] and "10" in warnings[0]


def test_speech_is_never_merged_across_pauses() -> None:
    items, _ = parse("one [pause] [pause:1s] two [pause] three")
    assert items == [
        Speech("one"),
        Pause(0.5),
        Pause(1.0),
        Speech("two"),
        Pause(0.5),
        Speech("three"),
    ]


def test_bad_inline_pause_names_line_and_column() -> None:
    with pytest.raises(MarkupError) as info:
        parse("First line\nsecond [pause:soon] line")
    assert (info.value.line, info.value.column) == (2, 8)
    assert "line 2, column 8" in str(info.value)


def test_text_without_markup_is_one_speech() -> None:
    assert parse("Just text, 3 cats.")[0] == [Speech("Just text, 3 cats.")]


def test_ssml_break_time_and_strength() -> None:
    text = (
        '<speak>A<break time="750ms"/>B<break time="2s"/>C<break strength="strong"/>D'
        '<break/>E<break strength="none"/>F</speak>'
    )
    items, warnings = parse(text)
    assert items == [
        Speech("A"),
        Pause(0.75),
        Speech("B"),
        Pause(2.0),
        Speech("C"),
        Pause(1.0),
        Speech("D"),
        Pause(0.5),
        Speech("EF"),
    ]
    assert warnings == []


def test_break_strengths_table() -> None:
    assert BREAK_STRENGTHS == {
        "none": 0.0,
        "x-weak": 0.1,
        "weak": 0.25,
        "medium": 0.5,
        "strong": 1.0,
        "x-strong": 2.0,
    }


def test_ssml_break_over_ten_seconds_is_capped() -> None:
    items, warnings = parse('<speak>A<break time="12000ms"/>B</speak>')
    assert items == [Speech("A"), Pause(10.0), Speech("B")] and len(warnings) == 1


def test_sub_says_the_alias() -> None:
    items, _ = parse('<speak>The <sub alias="World Wide Web Consortium">W3C</sub> met.</speak>')
    assert items == [Speech("The World Wide Web Consortium met.")]


@pytest.mark.parametrize(
    "kind, content, language, said",
    [
        ("characters", "IBM", "english", "I B M"),
        ("spell-out", "ab1", "english", "A B one"),
        ("cardinal", "1234", "english", "one thousand two hundred thirty-four"),
        ("cardinal", "1.234", "german", "eintausendzweihundertvierunddreißig"),
        ("ordinal", "3", "english", "third"),
        ("ordinal", "1", "french", "premier"),
        ("digits", "1234", "english", "one two three four"),
        ("digits", "42", "spanish", "cuatro dos"),
        ("telephone", "+1 555 0100", "english", "plus one, five five five, zero one zero zero"),
    ],
)
def test_say_as(kind: str, content: str, language: str, said: str) -> None:
    text = f'<speak>X <say-as interpret-as="{kind}">{content}</say-as> Y</speak>'
    items, warnings = parse(text, language=language)
    assert items == [Speech(f"X {said} Y")] and warnings == []


@pytest.mark.parametrize(
    "attrs, content, language, said",
    [
        ('format="mdy"', "03/15/2024", "english", "March fifteenth, twenty twenty-four"),
        ('format="dmy"', "15.03.2024", "german", "fünfzehnter März zweitausendvierundzwanzig"),
        ("", "15/03/2024", "french", "quinze mars deux mille vingt-quatre"),
        ("", "2024-03-15", "spanish", "quince de marzo de dos mil veinticuatro"),
    ],
)
def test_say_as_date(attrs: str, content: str, language: str, said: str) -> None:
    text = f'<speak><say-as interpret-as="date" {attrs}>{content}</say-as></speak>'
    assert parse(text, language=language)[0] == [Speech(said)]


def test_say_as_content_is_already_normalised() -> None:
    items, _ = parse('<speak><say-as interpret-as="cardinal">12</say-as> and 3</speak>')
    (speech,) = items
    assert normalize_text(speech.text, "english") == "twelve and three"


def test_say_as_that_cannot_be_read_warns_and_reads_plain_text() -> None:
    items, warnings = parse('<speak><say-as interpret-as="cardinal">many</say-as></speak>')
    assert items == [Speech("many")] and len(warnings) == 1


def test_p_and_s_end_sentences_so_the_chunker_splits() -> None:
    items, _ = parse("<speak><p>First part<s>one</s><s>two!</s></p>Last</speak>")
    assert items == [Speech("First part. one. two! Last")]


def test_unknown_tags_are_ignored_with_a_warning_and_their_text_kept() -> None:
    items, warnings = parse(
        '<speak><prosody rate="slow">Slow</prosody> <emphasis>words</emphasis></speak>'
    )
    assert items == [Speech("Slow words")]
    assert len(warnings) == 2 and "<prosody>" in warnings[0] and "line 1, column 8" in warnings[0]


@pytest.mark.parametrize(
    "text, line, column",
    [
        ("<speak>\n  <p>unclosed\n</speak>", 3, 3),
        ("<speak>a &nbsp; b</speak>", 1, 10),
        ('<speak>\n<break time="soon"/></speak>', 2, 1),
        ('<speak><break strength="loud"/></speak>', 1, 8),
    ],
)
def test_malformed_ssml_names_line_and_column(text: str, line: int, column: int) -> None:
    with pytest.raises(MarkupError) as info:
        parse(text)
    assert (info.value.line, info.value.column) == (line, column)
    assert f"line {line}, column {column}" in str(info.value)


def test_forced_ssml_without_speak_keeps_positions() -> None:
    assert parse('A<break time="1s"/>B', ssml=True)[0] == [Speech("A"), Pause(1.0), Speech("B")]
    with pytest.raises(MarkupError) as info:
        parse("ab</p>", ssml=True)
    assert (info.value.line, info.value.column) == (1, 5)  # expat points at the tag's name


def test_ssml_detection() -> None:
    assert parse('  <speak>a<break time="1s"/>b</speak>')[0] == [
        Speech("a"),
        Pause(1.0),
        Speech("b"),
    ]
    # Without auto-detection the tags are plain text, left for normalisation.
    assert parse("<speak>a</speak>", ssml=False)[0] == [Speech("<speak>a</speak>")]
