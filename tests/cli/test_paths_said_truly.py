"""Paths a careless or hostile user gives are named for what they are.

A loop of symbolic links or a link to nothing used to be "not found" (voice file,
input file, model pack, inspect); ``inspect`` took any file whose size is a
multiple of 4 (a zip named .wav, a truncated .onnx or .safetensors) for a
FluidAudio .bin and answered 0; an unreadable file (``/proc/self/mem``) gave the
OS's words with no path.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from pocketcli.cli.checks import readable_file
from pocketcli.cli.inspect import describe
from pocketcli.errors import UserError
from pocketcli.packs.manifest import PackManifest
from pocketcli.voices.state import load_voice_state


@pytest.fixture
def loop(tmp_path: Path) -> Path:
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    return tmp_path / "a"


def test_a_symlink_loop_is_named_a_loop(loop: Path) -> None:
    for call in (
        lambda: load_voice_state(loop),
        lambda: readable_file(loop, "input file"),
        lambda: PackManifest.read(loop),
        lambda: describe(loop),
    ):
        with pytest.raises(UserError, match=f"{loop} is a loop of symbolic links"):
            call()


def test_a_link_to_nothing_says_where_it_points(tmp_path: Path) -> None:
    link = tmp_path / "pack"
    link.symlink_to(tmp_path / "gone")
    with pytest.raises(UserError, match=f"is a symbolic link to {tmp_path / 'gone'}, which does"):
        PackManifest.read(link)
    with pytest.raises(UserError, match="voice file not found"):
        load_voice_state(tmp_path / "missing.safetensors")  # plainly absent: still that


def test_inspect_does_not_take_any_file_for_a_fluidaudio_bin(tmp_path: Path, pack_dir) -> None:
    fake = tmp_path / "voice.wav"
    with zipfile.ZipFile(fake, "w") as z:
        z.writestr("a.txt", "hello" * 100)
    truncated = tmp_path / "flow_head.onnx"
    truncated.write_bytes((pack_dir / "flow_head.onnx").read_bytes()[:500])
    for path in (fake, truncated):
        assert path.stat().st_size % 4 == 0  # what the last guess took as a raw .bin
        with pytest.raises(UserError, match=f"^{path} is no file inspect knows"):
            describe(path)  # a UserError: the CLI's one line and exit 1


def test_inspect_names_a_file_it_cannot_read() -> None:
    with pytest.raises(UserError, match="^cannot read /proc/self/mem: input/output error"):
        describe(Path("/proc/self/mem"))
