"""Batch files written as JSON lines ({"id": ..., "text": ...}) or as a CSV with an
"id,text" header are read by their fields, with the ids a plain `id|text` line gets: a
user's sweep (fourth session) found both spoken as their markup (the header "id,text" a
line of its own, every `{"id": ...}` read aloud) and the ids ignored, with exit 0."""

from __future__ import annotations

import json

import pytest

from pocketcli.batch import parse_batch


def _jsonl(*records: object) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def test_json_lines_give_their_ids_and_texts() -> None:
    items = parse_batch(_jsonl({"id": "a", "text": "Hello."}, {"text": "No id here."}))
    plain = parse_batch(b"a|Hello.\nNo id here.\n")
    assert [(i.name, i.text, i.error) for i in items] == [(i.name, i.text, i.error) for i in plain]
    assert items[0].name == "a" and items[1].text == "No id here."


def test_json_lines_keep_the_rules_of_ids() -> None:
    items = parse_batch(
        _jsonl(
            {"id": "../x", "text": "t"},
            {"id": "ok", "text": "t"},
            {"id": "OK", "text": "t"},
            {"id": "b", "txt": "typo"},
            {"id": "c", "text": 5},
            ["not", "an", "object"],
        )
        + b"{broken\n"
    )
    errors = [i.error for i in items]
    assert errors[1] is None
    assert "not a plain file name" in errors[0] and "same file as line 2" in errors[2]
    assert "'text'" in errors[3] and "'text'" in errors[4]
    assert "JSON object" in errors[5] and "JSON object" in errors[6]
    assert all(i.line_number == n for n, i in enumerate(items, start=1))


def test_a_json_line_nested_past_the_parser_is_one_error() -> None:
    deep = b'{"id": "a", "text": "t", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n"
    items = parse_batch(_jsonl({"id": "z", "text": "first"}) + deep)
    assert items[0].error is None and "JSON object" in (items[1].error or "")


def test_csv_with_an_id_text_header() -> None:
    data = '\ufeffid,text\r\na,"Hello, there."\r\n\r\nb,Plain text\r\n,No id\r\n'.encode()
    items = parse_batch(data)
    assert [(i.line_number, i.name, i.text) for i in items[:2]] == [
        (2, "a", "Hello, there."),
        (4, "b", "Plain text"),
    ]
    assert items[2].error is None and items[2].text == "No id"
    assert items[2].name == parse_batch(b"\n\n\n\nNo id\n")[0].name  # named as a plain line


@pytest.mark.parametrize("row", [b"a,b,c\n", b'a,"unclosed\n', b"only\n"])
def test_a_csv_row_without_two_fields_is_refused(row) -> None:
    (item,) = parse_batch(b"id,text\n" + row)
    assert item.error is not None and "id,text" in item.error


def test_text_that_only_looks_like_them_is_text() -> None:
    items = parse_batch(b"{curly} braces start this line.\nid,text is spoken here.\n")
    assert [i.text for i in items] == ["{curly} braces start this line.", "id,text is spoken here."]
    assert all(i.error is None for i in items)
