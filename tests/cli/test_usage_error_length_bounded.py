"""A usage error quotes the command line, so unquoted text (``pockettts normalize $(cat
book.txt)``) made a one-line error of the whole book (50 KB for 10,000 words). The line
is bounded; it says how long it was and what to do."""

from __future__ import annotations

import pytest

from pocketcli.cli.main import MAX_MESSAGE_CHARS, run


def test_ten_thousand_unquoted_words_give_a_short_usage_error(capsys) -> None:
    with pytest.raises(SystemExit) as end:
        run(["normalize", *["word"] * 10_000])
    assert end.value.code == 2
    error, hint = capsys.readouterr().err.splitlines()
    assert error.startswith("pockettts: error: Got unexpected extra argument(s) (word word")
    assert len(error) <= MAX_MESSAGE_CHARS + 80, len(error)
    assert error.endswith("characters; quote a text of several words)")
    assert hint.startswith("pockettts: hint: 'pockettts normalize --help'")


def test_a_short_usage_error_is_whole(capsys) -> None:
    with pytest.raises(SystemExit):
        run(["normalize", "two", "words"])
    error = capsys.readouterr().err.splitlines()[0]
    assert error == "pockettts: error: Got unexpected extra argument(s) (words)"
