"""README's promises about bytes, seeds, limits and paths, each pinned by a test that fails
when the promise breaks. Real console-script runs on the tiny pack (the server's, MCP's and
the batch rows' in the files named below).

promise (README) -> test
- "Same seed, same file" (`tts --seed 7 --temperature 0.7`), in every output format,
  Ogg Vorbis and Opus included (their stream serial comes from the content)
  -> test_same_seed_same_bytes_in_every_format; another seed is other bytes
  -> test_another_seed_is_other_bytes
- a batch line's seed is 64 bits of sha256(--seed, line name): it depends on those two
  only (not on the line's place, the other lines, the worker), and `tts TEXT --seed SEED`
  with the manifest's seed remakes the line byte for byte
  -> test_a_batch_lines_seed_is_its_name_and_the_base_seed_only
- `--temperature` a finite number from 0 to 10, `--seed` a whole number from 0 to 2^64-1,
  each end included -> test_temperature_and_seed_hold_at_both_ends
- a pause is capped at 10 s (exactly 10 s is kept, more is 10 s with a warning)
  -> test_a_pause_of_exactly_ten_seconds_is_kept_and_a_longer_one_capped
- batch `--streams N` from 1 to 256, `--jobs N` from 1 to 4096 -> test_batch_streams_and_jobs_bounds
- where a file may be written: a batch line's id never names a file outside
  --output-dir (tests/cli/batch/test_run.py); MCP's synthesize writes only inside
  --output-dir, not in a sibling folder whose name starts the same
  (tests/serve/test_mcp_paths.py); the server opens only voice files directly in
  --voice-dir, by their exact stem (tests/serve/test_voice_names.py)
- limits at exactly their value on the server (body, --max-chars, --max-connections,
  websocket sample_rate, the API key) -> tests/serve/test_limits_at_their_value.py;
  --max-streams / --max-queue at and over -> tests/serve/test_streams.py and
  tests/serve/test_http.py::test_first_audio_leaves_before_generation_ends_and_queue_bound_is_503;
  MCP's speech queue -> tests/serve/test_mcp_queue.py
- a stream's samples do not depend on what shares its ticks (batch rows taken over, a
  failed neighbour) -> tests/unit/runtimes/test_batch_rows_takeover.py
"""

from __future__ import annotations

import json
import wave
from pathlib import Path

import pytest

from tests.support.cli import run
from tests.support.paths import FIXTURES

TINY = FIXTURES / "tiny"
MODEL = ("--model-dir", str(TINY / "pack"), "--voice-file", str(TINY / "voice.safetensors"))
SENTENCE = "Same seed, same file."


def _speak(out: Path, *extra: str, text: str = SENTENCE):
    return run("tts", text, "-o", str(out), *MODEL, "-q", *extra)


FORMATS = [
    "wav",
    "flac",
    "mp3",
    "s16le",
    "f32le",
    "ogg",
    "opus",
]


@pytest.mark.parametrize("fmt", FORMATS)
def test_same_seed_same_bytes_in_every_format(tmp_path, fmt) -> None:
    runs = []
    for i in range(2):
        out = tmp_path / f"{i}.{fmt}"
        r = _speak(out, "--seed", "7", "--temperature", "0.7", "--format", fmt)
        assert r.returncode == 0, r.stderr
        runs.append(out.read_bytes())
    assert len(runs[0]) > 0
    assert runs[0] == runs[1]


def test_another_seed_is_other_bytes(tmp_path) -> None:
    for seed in ("7", "8"):
        made = _speak(tmp_path / f"{seed}.wav", "--seed", seed, "--temperature", "0.7")
        assert made.returncode == 0, made.stderr
    assert (tmp_path / "7.wav").read_bytes() != (tmp_path / "8.wav").read_bytes()


def _batch(lines: bytes, folder: Path, *extra: str) -> dict[str, dict]:
    source = folder.with_suffix(".txt")
    source.write_bytes(lines)
    r = run("tts", "--input-file", str(source), "--output-dir", str(folder), *MODEL, "-q", *extra)
    assert r.returncode == 0, r.stderr
    records = [json.loads(x) for x in (folder / "manifest.jsonl").read_text().splitlines()]
    return {r["id"]: r for r in records if r["id"] is not None}


def test_a_batch_lines_seed_is_its_name_and_the_base_seed_only(tmp_path) -> None:
    first = _batch(b"a|The first line.\nb|The second line.\n", tmp_path / "one", "--seed", "9")
    # Other lines around it, another order, another --streams: the same seed and bytes.
    second = _batch(
        b"z|Another one.\nb|The second line.\nq|More.\na|The first line.\n",
        tmp_path / "two",
        "--seed",
        "9",
        "--streams",
        "1",
    )
    other_base = _batch(b"a|The first line.\n", tmp_path / "three", "--seed", "10")
    renamed = _batch(b"c|The first line.\n", tmp_path / "four", "--seed", "9")
    for name in "ab":
        assert first[name]["seed"] == second[name]["seed"]
        assert (tmp_path / "one" / f"{name}.wav").read_bytes() == (
            tmp_path / "two" / f"{name}.wav"
        ).read_bytes()
    seeds = {first["a"]["seed"], first["b"]["seed"], other_base["a"]["seed"], renamed["c"]["seed"]}
    assert len(seeds) == 4  # the name and the base seed each change it
    assert all(0 <= seed < 2**64 for seed in seeds)
    # The manifest's seed remakes the line alone, byte for byte.
    alone = tmp_path / "alone.wav"
    assert _speak(alone, "--seed", str(first["a"]["seed"]), text="The first line.").returncode == 0
    assert alone.read_bytes() == (tmp_path / "one" / "a.wav").read_bytes()


@pytest.mark.parametrize(
    ("flag", "value", "accepted"),
    [
        ("--temperature", "0", True),
        ("--temperature", "10", True),
        ("--temperature", "9.999", True),
        ("--temperature", "10.001", False),
        ("--temperature", "-0.001", False),
        ("--temperature", "nan", False),
        ("--temperature", "inf", False),
        ("--seed", "0", True),
        ("--seed", str(2**64 - 1), True),
        ("--seed", str(2**64), False),
        ("--seed", "-1", False),
    ],
)
def test_temperature_and_seed_hold_at_both_ends(tmp_path, flag, value, accepted) -> None:
    out = tmp_path / "out.wav"
    r = _speak(out, f"{flag}={value}", text="Hi.")
    if accepted:
        assert r.returncode == 0, r.stderr
        assert out.stat().st_size > 44
    else:
        assert r.returncode == 2, r.stderr
        assert flag.encode() in r.stderr and b"Traceback" not in r.stderr
        assert len(r.stderr.decode().strip().splitlines()) <= 2  # the error and a hint
        assert not out.exists()


def _seconds(path: Path) -> float:
    with wave.open(str(path)) as w:
        return w.getnframes() / w.getframerate()


def test_a_pause_of_exactly_ten_seconds_is_kept_and_a_longer_one_capped(tmp_path) -> None:
    said = {}
    for pause in ("9.5s", "10s", "10.5s", "30s"):
        out = tmp_path / f"{pause}.wav"
        r = _speak(out, "--seed", "1", text=f"Hi. [pause:{pause}] Bye.")
        assert r.returncode == 0, r.stderr
        said[pause] = (_seconds(out), r.stderr.decode())
    assert said["10s"][0] - said["9.5s"][0] == pytest.approx(0.5, abs=1e-3)  # kept whole
    assert said["10.5s"][0] == said["10s"][0] == said["30s"][0]  # capped at 10 s
    assert "capped at 10 s" not in said["10s"][1] and "capped at 10 s" not in said["9.5s"][1]
    assert "pause of 10.5 s" in said["10.5s"][1] and "capped at 10 s" in said["10.5s"][1]


@pytest.mark.parametrize(
    ("flag", "value", "status"),
    [
        ("--streams", "1", 0),
        ("--streams", "256", 0),
        ("--streams", "257", 2),
        ("--streams", "0", 2),
        ("--jobs", "4096", 0),  # lowered to the cores, with a note
        ("--jobs", "4097", 2),
    ],
)
def test_batch_streams_and_jobs_bounds(tmp_path, flag, value, status) -> None:
    source = tmp_path / "lines.txt"
    source.write_bytes(b"a|One.\n")
    r = run(
        "tts", "--input-file", str(source), "--output-dir", str(tmp_path / "out"), *MODEL, "-q",
        flag, value,
    )  # fmt: skip
    assert r.returncode == status, r.stderr
    if status == 2:
        assert flag.encode() in r.stderr and b"Traceback" not in r.stderr
    else:
        assert (tmp_path / "out" / "a.wav").stat().st_size > 44
