"""`export --force` never replaces a folder that holds the run's own inputs (the --config,
its checkpoint or tokenizer, the --voice-clip): a user's sweep (fourth session) exported
into the folder of the config with --force, and the config, the checkpoint and the
tokenizer were deleted (exit 0). It is a usage error naming the input, before any work."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from tests.support.bundlehelp import TINY_CONFIG, TINY_MODEL, TINY_TOKENIZER
from tests.support.cli import run
from tests.support.paths import FIXTURES

PROMPT = FIXTURES / "tiny" / "clone_prompt_24k.wav"


def _model_folder(folder: Path, weights: str = "model.safetensors") -> Path:
    """A config with its checkpoint and tokenizer beside it (relative paths)."""
    config = yaml.safe_load(TINY_CONFIG.read_text())
    config["weights_path"] = weights
    config["flow_lm"]["lookup_table"]["tokenizer_path"] = "tokenizer.model"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "c.yaml").write_text(yaml.safe_dump(config))
    (folder / Path(weights).parent).mkdir(parents=True, exist_ok=True)
    shutil.copy(TINY_MODEL, folder / weights)
    shutil.copy(TINY_TOKENIZER, folder / "tokenizer.model")
    return folder / "c.yaml"


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _export(cwd: Path, *args: str):
    return run("export", *args, "-q", "--offline", "--force", cache=cwd / "cache", cwd=cwd)


CASES = {
    "the config's own folder": (
        ["--format", "kevinahm-v2", "m", "--config", "m/c.yaml"],
        "m/c.yaml",
    ),
    "the folder of the checkpoint": (
        ["--format", "kevinahm-v2", "m/w", "--config", "m/c.yaml"],
        "model.safetensors",
    ),
    "the folder of the voice clip": (
        ["--format", "web", "clips", "--config", "m/c.yaml", "--voice-clip", "clips/rec.wav"],
        "clips/rec.wav",
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_force_never_deletes_the_runs_inputs(tmp_path, name) -> None:
    args, said = CASES[name]
    weights = "w/model.safetensors" if "checkpoint" in name else "model.safetensors"
    _model_folder(tmp_path / "m", weights)
    (tmp_path / "clips").mkdir()
    shutil.copy(PROMPT, tmp_path / "clips" / "rec.wav")
    before = _files(tmp_path)
    r = _export(tmp_path, *args)
    err = r.stderr.decode()
    assert r.returncode == 2, err
    lines = [line for line in err.splitlines() if line.startswith("pockettts: error:")]
    assert len(lines) == 1 and said in lines[0], err
    assert "Traceback" not in err
    assert _files(tmp_path) == before


def test_force_still_replaces_a_folder_without_them(tmp_path) -> None:
    _model_folder(tmp_path / "m")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "notes.txt").write_text("replaced, as --force says")
    r = _export(
        tmp_path, "--format", "kevinahm-v2", "out", "--config", "m/c.yaml", "--precision", "fp32"
    )
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out" / "bundle.json").exists()
    assert not (tmp_path / "out" / "notes.txt").exists()
