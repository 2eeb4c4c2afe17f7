"""What a batch run hands its workers (``--ray``: Ray's actors, which run in Ray's working
folder or on another node): the driver's pack and request with their paths absolute, so a
``--model-dir`` relative to the command's folder opens the same pack in a worker's."""

from __future__ import annotations

import shutil
from pathlib import Path

from pocketcli.cli.batch_command import worker_spec
from pocketcli.cli.model_options import load_model
from pocketcli.options import ModelRequest


def test_a_relative_model_dir_opens_the_drivers_pack_in_a_workers_folder(
    pack_dir, tmp_path, monkeypatch
) -> None:
    here, elsewhere = tmp_path / "here", tmp_path / "ray-worker"
    shutil.copytree(pack_dir, here / "pack")
    elsewhere.mkdir()
    monkeypatch.chdir(here)  # the command runs here: --model-dir pack
    choice = ModelRequest(model_dir=Path("pack"), runtime="onnx")
    spec = worker_spec(choice, load_model(choice, quiet=True), threads=1)
    assert spec.pack_dir == str(here / "pack")  # what the job carries names it from anywhere
    assert spec.request.model_dir == here / "pack"
    monkeypatch.chdir(elsewhere)  # a worker's folder: no ./pack there
    worker = spec.load()
    assert Path(worker._pack_dir) == here / "pack"
