"""A KevinAHM v2 bundle whose bundle.json carries a value that cannot be honoured is one
line naming the file, the field and the value (not speech cut short, unsaid)."""

from __future__ import annotations

import json

import pytest

from pocketcli.api import PocketTTS
from pocketcli.runtimes.kevinahm import BundleError
from tests.support.bundlehelp import copy_of_bundle


@pytest.mark.parametrize("frames", [-5, 2.5, "x", True])
def test_frames_after_eos_must_be_a_whole_number_from_zero(tmp_path, frames) -> None:
    bundle = copy_of_bundle(tmp_path)
    meta = json.loads((bundle / "bundle.json").read_text())
    meta["model_recommended_frames_after_eos"] = frames
    (bundle / "bundle.json").write_text(json.dumps(meta))
    with pytest.raises(BundleError) as caught:
        PocketTTS.open(runtime="onnx", model_dir=bundle)
    assert str(caught.value) == (
        f"{bundle / 'bundle.json'}: model_recommended_frames_after_eos must be a whole"
        f" number from 0 (or null), not {frames!r}"
    )
