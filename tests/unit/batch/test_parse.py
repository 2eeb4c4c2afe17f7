"""Batch lines: ids, stable names, and names that cannot escape the output folder."""

from __future__ import annotations

import pytest

from pocketcli.batch import parse_batch


def test_plain_lines_get_stable_names_from_their_text() -> None:
    a = parse_batch(b"Hello there.\n\nGood bye.\n")
    b = parse_batch(b"Hello there.\n\nGood bye.\n")
    assert [i.name for i in a] == [i.name for i in b]
    assert [i.line_number for i in a] == [1, 3]
    edited = parse_batch(b"Hello there!\n\nGood bye.\n")
    assert edited[0].name != a[0].name and edited[1].name == a[1].name


def test_ids_and_pipes_inside_text() -> None:
    items = parse_batch(b"ch01|Call me Ishmael.\nA | B is not an id line.\n")
    assert items[0].name == "ch01" and items[0].text == "Call me Ishmael."
    assert items[1].text == "A | B is not an id line." and items[1].error is None


@pytest.mark.parametrize(
    "line", [b"../x|t", b"/etc/passwd|t", b".hidden|t", b"a/b|t", b"..|t", b"C:\\x|t"]
)
def test_unsafe_ids_are_refused(line: bytes) -> None:
    (item,) = parse_batch(line)
    assert item.error is not None and item.name == ""


def test_bad_lines_are_reported_not_dropped() -> None:
    items = parse_batch(b"ok|fine\nok|again\n\xff bad\nnul\x00here\nid|\n")
    assert [i.error is None for i in items] == [True, False, False, False, False]
    assert "already used on line 1" in items[1].error
