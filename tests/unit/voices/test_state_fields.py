"""A voice-state file's every field is checked: batch size, offset, padding, layers agreeing.

Made from the committed tiny voice, one field changed at a time; each broken file is one
clear line naming the file and the field, through the library and through the CLI.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from pocketcli.voices.state import VoiceError, load_voice_state
from tests.support.cli import run

LAYER = "transformer.layers.{}.self_attn/{}"
Tensors = dict[str, np.ndarray]


def _set(field: str, value: np.ndarray, layer: int = 0) -> Callable[[Tensors], None]:
    def change(t: Tensors) -> None:
        t[LAYER.format(layer, field)] = value

    return change


def _batched(t: Tensors) -> None:
    for i in (0, 1):
        cache = t[LAYER.format(i, "cache")]
        t[LAYER.format(i, "cache")] = np.concatenate([cache, cache], axis=1)  # batch of 2


def _shorter_layer(t: Tensors) -> None:
    t[LAYER.format(1, "offset")] = np.array([20], np.int64)


BROKEN = {
    "batch of two": (_batched, r"layer 0 cache has shape \[2, 2, 27, 4, 16\]"),
    "offset 0": (_set("offset", np.array([0], np.int64)), "layer 0 offset 0 outside"),
    "offset past the cache": (_set("offset", np.array([28], np.int64), 1), "layer 1 offset 28"),
    "negative offset": (_set("offset", np.array([-1], np.int64)), "layer 0 offset -1 outside"),
    "left padding": (_set("pad", np.array([1], np.int64)), "layer 0 has left padding 1"),
    "two offsets": (_set("offset", np.array([3, 4], np.int64)), "offset must be one integer"),
    "layers disagree": (_shorter_layer, "layers disagree on length"),
}


@pytest.fixture(scope="module")
def good(voice_path: Path) -> Tensors:
    return load_file(str(voice_path))


def _write(tmp_path: Path, good: Tensors, change: Callable[[Tensors], None]) -> Path:
    tensors = dict(good)
    change(tensors)
    path = tmp_path / "voice.safetensors"
    save_file(tensors, str(path))
    return path


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_field_is_refused_naming_it(tmp_path: Path, good: Tensors, case: str) -> None:
    change, message = BROKEN[case]
    path = _write(tmp_path, good, change)
    with pytest.raises(VoiceError, match=message) as info:
        load_voice_state(path)
    assert str(info.value).startswith(f"{path}: ") and "\n" not in str(info.value)


def test_a_shorter_offset_keeps_that_prefix_keys_then_values(tmp_path, good: Tensors) -> None:
    def shorter(t: Tensors) -> None:
        for i in (0, 1):
            t[LAYER.format(i, "offset")] = np.array([11], np.int64)

    state = load_voice_state(_write(tmp_path, good, shorter))
    assert state.length == 11 and state.num_layers == 2
    for i in (0, 1):
        cache = good[LAYER.format(i, "cache")]
        np.testing.assert_array_equal(state.keys[i], cache[0, 0, :11])
        np.testing.assert_array_equal(state.values[i], cache[1, 0, :11])


def test_the_cli_refuses_a_batched_voice_in_one_line(tmp_path, good, pack_dir) -> None:
    path = _write(tmp_path, good, _batched)
    out = tmp_path / "o.wav"
    r = run(
        "tts", "Hello.", "--model-dir", pack_dir, "--voice-file", path, "-o", out, "-q", text=True
    )
    assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
    assert str(path) in r.stderr and "[2, 2, 27, 4, 16]" in r.stderr
    assert not out.exists()
