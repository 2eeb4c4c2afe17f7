"""`tts --input-file` with JSON lines or an `id,text` CSV writes one WAV per record, named by
its id, the same bytes as the `id|text` file of the same records (a user's sweep, fourth
session: both were spoken as their markup, the ids ignored, exit 0)."""

from __future__ import annotations

import json

import pytest

from tests.support.cli import run

FILES = {
    "lines.jsonl": (
        json.dumps({"id": "a", "text": "Hello there."})
        + "\r\n"
        + json.dumps({"text": "No id, here.", "speaker": "ignored"})
        + "\r\n"
    ).encode(),
    "lines.csv": '\ufeffid,text\r\na,Hello there.\r\n,"No id, here."\r\n'.encode(),
}


@pytest.mark.parametrize("name", list(FILES))
def test_records_are_spoken_by_their_fields(pack_dir, voice_path, tmp_path, name) -> None:
    (tmp_path / name).write_bytes(FILES[name])
    (tmp_path / "lines.txt").write_bytes(b"a|Hello there.\nNo id, here.\n")
    common = ("--model-dir", pack_dir, "--voice-file", voice_path, "--seed", "3", "-q")
    r = run("tts", "--input-file", tmp_path / name, "--output-dir", tmp_path / "out", *common)
    assert r.returncode == 0, r.stderr
    ref = run(
        "tts", "--input-file", tmp_path / "lines.txt", "--output-dir", tmp_path / "ref", *common
    )
    assert ref.returncode == 0, ref.stderr
    records = [
        json.loads(x) for x in (tmp_path / "out" / "manifest.jsonl").read_text().splitlines()
    ]
    assert sorted(r["text"] for r in records) == ["Hello there.", "No id, here."]
    assert (tmp_path / "out" / "a.wav").read_bytes() == (tmp_path / "ref" / "a.wav").read_bytes()
    (plain,) = [r["file"] for r in records if r["id"] != "a"]
    assert plain.startswith("line0000")
    assert (tmp_path / "out" / plain).stat().st_size > 44
