"""Nothing at an output path is lost (issue 32): `export` and the folder writers refuse
what they did not make, never put a folder where a file, link or special file is, and
name the user's path (never a temporary one) in one line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from pocketcli.atomic import FolderKind, atomic_folder, atomic_path
from pocketcli.errors import OutputRefused, UserError
from tests.support.bundlehelp import TINY_CONFIG, TINY_MODEL, TINY_TOKENIZER
from tests.support.cli import run


def _config(tmp_path: Path, weights: Path = TINY_MODEL) -> Path:
    config = yaml.safe_load(TINY_CONFIG.read_text())
    config["weights_path"] = str(weights)
    config["flow_lm"]["lookup_table"]["tokenizer_path"] = str(TINY_TOKENIZER)
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _export(tmp_path: Path, out: str, *extra: str, fmt: str = "kevinahm-v2", weights=TINY_MODEL):
    config = _config(tmp_path, weights)
    args = ["export", "--format", fmt, out, "--config", str(config), "-q"]
    if fmt == "kevinahm-v2":
        args += ["--precision", "fp32"]
    return run(*args, *extra, cache=tmp_path / "cache", cwd=tmp_path)


# A refusal comes before any work: with no checkpoint at all, the output path is what is
# said (exit 2), not the missing checkpoint (exit 1).
NO_WEIGHTS = Path("/nonexistent/model.safetensors")


def _refused(r, path: str) -> str:
    err = r.stderr.decode()
    assert r.returncode == 2, err
    assert "Traceback" not in err and "Error:" not in err, err
    lines = [line for line in err.splitlines() if line.startswith("pockettts: error:")]
    assert len(lines) == 1, err
    assert f"cannot write {path}:" in lines[0], err
    assert ".exporting-" not in err and ".old-" not in err, err
    return lines[0]


def _hidden_leftovers(folder: Path) -> list[str]:
    return [n for n in os.listdir(folder) if n.startswith(".") and n != ".cache"]


def test_a_folder_of_the_users_is_refused_and_kept(tmp_path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    (d / "notes.txt").write_text("notes")
    line = _refused(_export(tmp_path, "d", weights=NO_WEIGHTS), "d")
    assert "notes.txt" in line and "--force" in line
    assert (d / "notes.txt").read_text() == "notes"
    assert _hidden_leftovers(tmp_path) == []


def test_force_replaces_a_folder_of_the_users(tmp_path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    (d / "notes.txt").write_text("notes")
    r = _export(tmp_path, "d", "--force")
    assert r.returncode == 0, r.stderr.decode()
    assert (d / "bundle.json").is_file() and not (d / "notes.txt").exists()
    assert _hidden_leftovers(tmp_path) == []


def test_an_export_of_its_own_is_replaced_but_a_file_added_to_it_is_kept(tmp_path) -> None:
    r = _export(tmp_path, "b")
    assert r.returncode == 0, r.stderr.decode()
    r = _export(tmp_path, "b")  # our own bundle: replaced without --force
    assert r.returncode == 0, r.stderr.decode()
    (tmp_path / "b" / "README.txt").write_text("mine")
    line = _refused(_export(tmp_path, "b"), "b")
    assert "README.txt" in line
    assert (tmp_path / "b" / "README.txt").read_text() == "mine"
    assert _hidden_leftovers(tmp_path) == []


def test_an_empty_folder_is_filled(tmp_path) -> None:
    (tmp_path / "e").mkdir()
    r = _export(tmp_path, "e")
    assert r.returncode == 0, r.stderr.decode()
    assert (tmp_path / "e" / "bundle.json").is_file()


@pytest.mark.parametrize("fmt", ["kevinahm-v2", "web"])
@pytest.mark.parametrize("kind", ["file", "symlink", "dangling", "fifo"])
def test_a_file_link_or_fifo_is_never_replaced_by_a_folder(tmp_path, kind, fmt) -> None:
    out = tmp_path / "out"
    if kind == "file":
        out.write_text("keep")
    elif kind == "symlink":
        (tmp_path / "real").mkdir()
        out.symlink_to(tmp_path / "real")
    elif kind == "dangling":
        out.symlink_to(tmp_path / "nowhere")
    else:
        os.mkfifo(out)
    before = os.lstat(out)
    extra = ("--voice-clip", str(TINY_TOKENIZER.parent.parent / "clone_prompt_24k.wav"))
    r = _export(tmp_path, "out", *(extra if fmt == "web" else ()), fmt=fmt, weights=NO_WEIGHTS)
    _refused(r, "out")
    after = os.lstat(out)
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)
    assert _hidden_leftovers(tmp_path) == []


@pytest.mark.parametrize("out", [".", ".."])
def test_dot_and_dot_dot_are_one_line(tmp_path, out) -> None:
    _refused(_export(tmp_path, out, "--force", weights=NO_WEIGHTS), out)


def test_a_missing_parent_is_named_not_created(tmp_path) -> None:
    line = _refused(_export(tmp_path, "typo/out"), "typo/out")
    assert "typo" in line.split(":", 2)[2]
    assert not (tmp_path / "typo").exists()


def test_a_virtual_file_system_names_the_users_path(tmp_path) -> None:
    if not os.path.isdir("/proc/self"):
        pytest.skip("no /proc")
    _refused(_export(tmp_path, "/proc/pockettts-x"), "/proc/pockettts-x")


_ANY = FolderKind("test folder", lambda _f: True, lambda _f: ("a",))


def test_a_folder_swapped_for_a_fifo_while_written_is_not_replaced(tmp_path) -> None:
    out = tmp_path / "out"
    with pytest.raises(OutputRefused), atomic_folder(out, _ANY) as work:
        (work / "a").write_text("x")
        os.mkfifo(out)  # appears between the first check and the publish
    assert os.path.exists(out) and not out.is_dir() and out.is_fifo()
    assert _hidden_leftovers(tmp_path) == []


def test_a_file_added_to_a_folder_while_it_is_written_is_kept(tmp_path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "a").write_text("old")
    with pytest.raises(OutputRefused), atomic_folder(out, _ANY) as work:
        (work / "a").write_text("new")
        (out / "b").write_text("the user's, added meanwhile")  # not the writer's: refused
    assert (out / "b").is_file() and (out / "a").read_text() == "old"
    assert _hidden_leftovers(tmp_path) == []


def test_a_file_that_turns_into_a_fifo_while_written_is_not_replaced(tmp_path) -> None:
    out = tmp_path / "out.wav"
    out.write_bytes(b"old")
    with pytest.raises(UserError, match="out.wav"), atomic_path(out) as tmp:
        tmp.write_bytes(b"new")
        out.unlink()
        os.mkfifo(out)
    assert out.is_fifo()
    assert [n for n in os.listdir(tmp_path) if n.startswith(".")] == []
