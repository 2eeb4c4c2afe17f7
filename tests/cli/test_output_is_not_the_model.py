"""An output that names a file of the run's model (a file of the --model-dir folder, the
--config file) or, for `benchmark`, one of its inputs is a usage error before anything is
read or written: found by a user's sweep (fourth session), where `tts --metrics
pack/pack.json` replaced the pack's description with the metrics JSON, `clone -o
pack/constants.safetensors --model-dir pack` and `tts --save-voice
pack/constants.safetensors` left a damaged pack, and `benchmark --output-json` onto its own
`--voice-file` replaced the voice with the report, all with exit 0."""

from __future__ import annotations

import shutil

import pytest

from tests.support import cli
from tests.support.paths import FIXTURES

TINY = FIXTURES / "tiny"
PROMPT = TINY / "clone_prompt_24k.wav"
VOICE = TINY / "voice.safetensors"

SPEAK = ("tts", "Hello.", "--voice-file", "v.safetensors", "-o", "a.wav")
CASES = {
    "tts --metrics onto pack.json": ([*SPEAK, "--metrics", "pk/pack.json"], "pk/pack.json"),
    "tts --save-voice onto a pack file": (
        ["tts", "Hello.", "--clone-voice", "rec.wav", "-o", "a.wav"]
        + ["--save-voice", "pk/constants.safetensors"],
        "pk/constants.safetensors",
    ),
    "tts --metrics onto a pack file through ./": (
        [*SPEAK, "--metrics", "./pk/../pk/tokenizer.model"],
        "./pk/../pk/tokenizer.model",
    ),
    "tts --metrics through a link into the pack": ([*SPEAK, "--metrics", "link.json"], "link.json"),
    "clone -o onto a pack file": (
        ["clone", "rec.wav", "-o", "pk/constants.safetensors"],
        "pk/constants.safetensors",
    ),
    "benchmark --output-json onto a pack file": (
        ["benchmark", "--corpus-path", "c.txt", "--skip-asr", "--voice-file", "v.safetensors"]
        + ["--output-json", "pk/pack.json"],
        "pk/pack.json",
    ),
    "benchmark --output-json onto --voice-file": (
        ["benchmark", "--corpus-path", "c.txt", "--skip-asr", "--voice-file", "v.safetensors"]
        + ["--output-json", "v.safetensors"],
        "v.safetensors",
    ),
    "benchmark --output-json onto --corpus-path": (
        ["benchmark", "--corpus-path", "c.txt", "--skip-asr", "--voice-file", "v.safetensors"]
        + ["--output-json", "c.txt"],
        "c.txt",
    ),
}


def _files(root) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("name", list(CASES))
def test_an_output_onto_the_model_or_an_input_is_refused(tmp_path, name) -> None:
    args, said = CASES[name]
    shutil.copytree(TINY / "pack", tmp_path / "pk")
    shutil.copy(PROMPT, tmp_path / "rec.wav")
    shutil.copy(VOICE, tmp_path / "v.safetensors")
    (tmp_path / "c.txt").write_text("Hello there.\n", encoding="utf-8")
    (tmp_path / "link.json").symlink_to("pk/pack.json")
    before = _files(tmp_path)
    r = cli.run(*args, "--model-dir", "pk", "-q", cwd=tmp_path)
    err = r.stderr.decode()
    assert r.returncode == 2, err
    first = err.splitlines()[0]
    assert first.startswith("pockettts: error: ") and said in first, err
    assert "Error" not in err and "Traceback" not in err
    assert _files(tmp_path) == before  # nothing written, nothing replaced


def test_a_config_file_is_an_input_too(tmp_path) -> None:
    shutil.copy(TINY / "config.yaml", tmp_path / "c.yaml")
    before = (tmp_path / "c.yaml").read_bytes()
    r = cli.run(
        *("tts", "Hello.", "--config", "c.yaml", "--offline", "-o", "a.wav"),
        *("--metrics", "c.yaml", "-q"),
        cwd=tmp_path,
    )
    assert r.returncode == 2, r.stderr
    assert "c.yaml" in r.stderr.decode().splitlines()[0]
    assert (tmp_path / "c.yaml").read_bytes() == before
    assert not (tmp_path / "a.wav").exists()


def test_a_new_file_in_the_pack_folder_and_a_voice_beside_it_are_fine(tmp_path) -> None:
    shutil.copytree(TINY / "pack", tmp_path / "pk")
    shutil.copy(PROMPT, tmp_path / "rec.wav")
    r = cli.run(
        "clone", "rec.wav", "-o", "pk/me.safetensors", "--model-dir", "pk", "-q", cwd=tmp_path
    )
    assert r.returncode == 0, r.stderr
    r = cli.run(
        *("tts", "Hello.", "--voice-file", "pk/me.safetensors", "--model-dir", "pk"),
        *("-o", "a.wav", "--metrics", "m.json", "-q"),
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "a.wav").stat().st_size > 44 and (tmp_path / "m.json").exists()
