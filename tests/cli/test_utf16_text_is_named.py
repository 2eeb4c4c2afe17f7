"""Text saved as UTF-16 or UTF-32 (Windows editors' "Unicode") is refused in one line that
names the encoding and the fix, on stdin and as ``--input-file``. It used to be "not UTF-8
text (byte 0)" on stdin, and a batch failed on every one of its lines, one error each."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from pocketcli.cli import clickcompat as click
from pocketcli.cli.text_input import read_input_file, read_text

LINES = "a|Hello there.\nb|Again.\n"


@pytest.mark.parametrize(
    ("encoding", "name"),
    [("utf-16", "UTF-16"), ("utf-16-be", "UTF-16"), ("utf-32", "UTF-32")],
)
def test_utf16_and_utf32_text_is_refused_by_its_name(tmp_path: Path, monkeypatch, encoding, name):
    data = LINES.encode(encoding)
    if encoding == "utf-16-be":
        data = b"\xfe\xff" + data  # what an editor saving big-endian UTF-16 writes
    path = tmp_path / "lines.txt"
    path.write_bytes(data)
    with pytest.raises(click.UsageError) as batch:
        read_input_file(path)
    assert batch.value.format_message() == (
        f"{path} is {name} text (it starts with a {name} byte order mark); pockettts reads"
        f" UTF-8: convert it, e.g. iconv -f {name} -t UTF-8"
    )
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data)))
    with pytest.raises(click.UsageError, match=f"^standard input is {name} text"):
        read_text(None)


def test_utf8_with_or_without_its_mark_is_read(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "lines.txt"
    path.write_bytes(b"\xef\xbb\xbf" + LINES.encode())
    assert read_input_file(path) == b"\xef\xbb\xbf" + LINES.encode()  # batch drops the mark
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(LINES.encode())))
    assert read_text(None).strip() == LINES.strip()
