"""Reading and writing Kyutai voice-state files, and refusing broken ones."""

from __future__ import annotations

import numpy as np
import pytest
from safetensors.numpy import save_file

from pocketcli.voices.state import VoiceError, VoiceState, load_voice_state, save_voice_state


def _state(layers=2, length=7, heads=4, head_dim=16, seed=0) -> VoiceState:
    rng = np.random.default_rng(seed)
    keys = tuple(
        rng.standard_normal((length, heads, head_dim)).astype(np.float32) for _ in range(layers)
    )
    values = tuple(
        rng.standard_normal((length, heads, head_dim)).astype(np.float32) for _ in range(layers)
    )
    return VoiceState(keys, values)


def _kyutai_file(path, cache: np.ndarray, offset: int, layers: int = 1) -> None:
    tensors = {}
    for i in range(layers):
        tensors[f"transformer.layers.{i}.self_attn/cache"] = cache
        tensors[f"transformer.layers.{i}.self_attn/offset"] = np.array([offset], np.int64)
        tensors[f"transformer.layers.{i}.self_attn/pad"] = np.zeros(1, np.int64)
    save_file(tensors, str(path))


def test_round_trip_in_kyutai_layout(tmp_path) -> None:
    state = _state()
    path = tmp_path / "v.safetensors"
    save_voice_state(state, path)
    loaded = load_voice_state(path)
    assert loaded.length == 7 and loaded.num_layers == 2
    for a, b in zip(state.keys + state.values, loaded.keys + loaded.values, strict=True):
        assert np.array_equal(a, b)
    assert not list(tmp_path.glob(".*part"))  # no temporary file left behind


def test_only_the_valid_prefix_is_used(tmp_path) -> None:
    cache = np.full((2, 1, 10, 2, 4), np.nan, np.float32)
    cache[:, :, :6] = 1.0
    path = tmp_path / "expanded.safetensors"
    _kyutai_file(path, cache, offset=6)
    assert load_voice_state(path).length == 6


@pytest.mark.parametrize(
    "case, message",
    [
        ("nan", "NaN"),
        ("offset", "outside its cache"),
        ("shape", "expected \\[2, 1, T, heads, head_dim\\]"),
        ("garbage", "not a readable safetensors"),
        ("missing", "not found"),
        ("foreign", "no Kyutai voice-state tensor in it \\(it holds: audio_prompt\\)"),
    ],
)
def test_broken_files_are_refused_with_a_reason(tmp_path, case, message) -> None:
    path = tmp_path / "bad.safetensors"
    good = np.ones((2, 1, 5, 2, 4), np.float32)
    if case == "nan":
        bad = good.copy()
        bad[0, 0, 2, 0, 0] = np.nan
        _kyutai_file(path, bad, 5)
    elif case == "offset":
        _kyutai_file(path, good, 9)
    elif case == "shape":
        _kyutai_file(path, np.ones((2, 5, 2, 4), np.float32), 5)
    elif case == "garbage":
        path.write_bytes(b"\x00\x01not a safetensors file at all" * 10)
    elif case == "foreign":
        save_file({"audio_prompt": np.ones((1, 3, 8), np.float32)}, str(path))
    with pytest.raises(VoiceError, match=message):
        load_voice_state(path)
