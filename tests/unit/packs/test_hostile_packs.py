"""A pack, a bundle and a config are not believed (issue 32): pack.json is covered by the
pack's checksums, every number read from a file is bounded before anything is allocated,
and a graph that is not the graph of its role is one line naming the file. Each hostile
file is made in tmp_path from the committed tiny pack, run through the real CLI in a
subprocess whose peak memory is measured (it must stay within twice a normal run's)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from pocketcli.packs.manifest import seal
from tests.support.bundlehelp import TINY_CONFIG, TINY_MODEL, TINY_TOKENIZER, copy_of_bundle
from tests.support.cli import SCRIPT, cli_env

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "tiny"
VOICE = FIXTURE / "voice.safetensors"

# Runs the CLI as its child and prints the child's peak RSS (KB) after its stderr.
_MEASURE = (
    "import resource, subprocess, sys\n"
    "r = subprocess.run(sys.argv[1:], capture_output=True)\n"
    "sys.stdout.buffer.write(r.stderr)\n"
    "print('RC', r.returncode, 'PEAK', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
)


def _measured(*args: str, cwd: Path | None = None) -> tuple[int, str, int]:
    """(exit status, stderr, peak RSS in KB) of ``pockettts *args``."""
    out = subprocess.run(
        [sys.executable, "-c", _MEASURE, SCRIPT, *args],
        capture_output=True,
        env=cli_env(),
        cwd=cwd,
        timeout=300,
    ).stdout.decode()
    text, _, tail = out.rpartition("RC ")
    rc, _, peak = tail.split()
    return int(rc), text, int(peak)


def _tts(pack: Path, tmp_path: Path) -> tuple[int, str, int]:
    out = str(tmp_path / "out.wav")
    return _measured("tts", "Hello there.", "--model-dir", str(pack), "--voice-file", str(VOICE),
                     "-o", out, "-q")  # fmt: skip


@pytest.fixture(scope="module")
def baseline_peak(tmp_path_factory) -> int:
    """A normal run's peak RSS on the tiny pack: what the model itself costs."""
    tmp = tmp_path_factory.mktemp("baseline")
    rc, err, peak = _tts(FIXTURE / "pack", tmp)
    assert rc == 0, err
    return peak


def _one_line(err: str, rc: int, *words: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert rc == 1, err
    assert len(lines) == 1 and lines[0].startswith("pockettts: error: "), err
    assert "Traceback" not in err and "Error:" not in lines[0].split("error:", 1)[1], err
    for word in words:
        assert word in lines[0], err
    return lines[0]


def _pack_with(tmp_path: Path, change: Callable[[dict], None], sealed: bool = True) -> Path:
    """A copy of the tiny pack whose pack.json is changed; ``sealed``: its own sha256
    recomputed (as someone who knows the format would), else left as it was."""
    pack = tmp_path / "pack"
    shutil.copytree(FIXTURE / "pack", pack)
    (pack / ".pockettts-verified.json").unlink(missing_ok=True)
    data = json.loads((pack / "pack.json").read_text(encoding="utf-8"))
    change(data)
    (pack / "pack.json").write_text(json.dumps(seal(data) if sealed else data), encoding="utf-8")
    return pack


def _layers(n: int) -> Callable[[dict], None]:
    return _in_pack(FT, "num_layers", n)


def _state(shape: list[int]) -> Callable[[dict], None]:
    return lambda d: d["mimi_states"][0].__setitem__("shape", shape)


FT = ("flow_lm", "transformer")
FTN = "flow_lm.transformer."


def _set(section: tuple[str, ...], key: str, value) -> Callable[[dict], None]:
    def change(d: dict) -> None:
        for name in section:
            d = d[name]
        d[key] = value

    return change


def _in_pack(section: tuple[str, ...], key: str, value) -> Callable[[dict], None]:
    return lambda d: _set(section, key, value)(d["config"])


def test_an_edited_pack_json_is_a_damaged_pack(tmp_path, baseline_peak) -> None:
    pack = _pack_with(tmp_path, _layers(100000), sealed=False)
    rc, err, peak = _tts(pack, tmp_path)
    _one_line(err, rc, "damaged", "pack.json")
    assert peak < 2 * baseline_peak


@pytest.mark.parametrize(
    "change, words",
    [
        (_layers(100000), ("num_layers", "100000", "pack.json")),
        (_state([1, 16, 1_000_000_000]), ("upsample", "pack.json")),
        (_state([1, 4000, 4000]), ("upsample", "pack.json")),
        (_in_pack(FT, "num_heads", 0), ("num_heads",)),
        (_in_pack(("mimi",), "sample_rate", 0), ("sample_rate",)),
        (_in_pack(FT, "d_model", "64"), ("d_model",)),
    ],
)  # fmt: skip
def test_numbers_of_pack_json_are_bounded_before_use(
    tmp_path, baseline_peak, change, words
) -> None:
    rc, err, peak = _tts(_pack_with(tmp_path, change), tmp_path)
    _one_line(err, rc, *words)
    assert peak < 2 * baseline_peak


@pytest.mark.parametrize(
    "change, words",
    [
        (_layers(3), ("flowlm_step_batch.onnx", "key_cache_2")),  # more layers than the graph
        (_layers(1), ("flowlm_step_batch.onnx", "key_cache_1")),  # fewer
        (_state([1, 16, 65]), ("mimi_decoder_batch.onnx", "state.upsample")),
        (_in_pack(FT, "num_heads", 2),
         ("flowlm_step_batch.onnx", "key_cache_0")),
    ],
)  # fmt: skip
def test_numbers_the_graphs_do_not_have_are_one_line_naming_the_graph(
    tmp_path, baseline_peak, change, words
) -> None:
    rc, err, peak = _tts(_pack_with(tmp_path, change), tmp_path)
    _one_line(err, rc, *words)
    assert peak < 2 * baseline_peak


def test_a_graph_in_the_place_of_another_is_named(tmp_path) -> None:
    pack = _pack_with(tmp_path, lambda d: None)
    data = json.loads((pack / "pack.json").read_text())
    data["graphs"]["fp32"]["flow_head_batch"] = data["graphs"]["fp32"]["mimi_decoder_batch"]
    (pack / "pack.json").write_text(json.dumps(seal(data)))
    rc, err, _ = _tts(pack, tmp_path)
    _one_line(err, rc, "mimi_decoder_batch.onnx", "is not a flow head")


def test_serve_never_says_ready_for_a_pack_that_cannot_speak(tmp_path) -> None:
    pack = _pack_with(tmp_path, _layers(3))
    r = subprocess.run([SCRIPT, "serve", "--port", "0", "--model-dir", str(pack)],
                       capture_output=True, env=cli_env(), timeout=120)  # fmt: skip
    assert r.returncode == 1
    last = r.stderr.decode().strip().splitlines()[-1]
    assert last.startswith("pockettts: error: ") and "key_cache_2" in last, last


def test_a_bundle_whose_flow_graph_is_the_mimi_decoder_is_one_line(tmp_path) -> None:
    bundle = copy_of_bundle(tmp_path)
    shutil.copyfile(bundle / "mimi_decoder.onnx", bundle / "flow_lm_flow.onnx")
    rc, err, _ = _tts(bundle, tmp_path)
    line = _one_line(err, rc, "flow_lm_flow.onnx", "is not a flow head")
    assert len(line) < 300


# -- configs ------------------------------------------------------------------------------


def _config(tmp_path: Path, change: Callable[[dict], None] | None = None) -> Path:
    config = yaml.safe_load(TINY_CONFIG.read_text())
    config["weights_path"] = str(TINY_MODEL)
    config["flow_lm"]["lookup_table"]["tokenizer_path"] = str(TINY_TOKENIZER)
    if change is not None:
        change(config)
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _export(tmp_path: Path, config: Path) -> tuple[int, str, int]:
    return _measured("export", "--format", "kevinahm-v2", str(tmp_path / "out"), "--config",
                     str(config), "--precision", "fp32", "-q", cwd=tmp_path)  # fmt: skip


@pytest.mark.parametrize(
    "change, field",
    [
        (_set(FT, "num_layers", 1_000_000_000), FTN + "num_layers"),
        (_set(FT, "num_heads", 0), FTN + "num_heads"),
        (_set(FT, "d_model", "64"), FTN + "d_model"),
        (_set(FT, "num_layers", True), FTN + "num_layers"),
        (_set(("mimi",), "sample_rate", 0), "mimi.sample_rate"),
        (_set(("mimi", "seanet"), "ratios", [6] * 1000), "mimi.seanet.ratios"),
        (_set(("mimi", "transformer"), "context", 10**12), "mimi.transformer.context"),
        (_set(("flow_lm", "lookup_table"), "n_bins", 10**9), "flow_lm.lookup_table.n_bins"),
    ],
)  # fmt: skip
def test_numbers_of_a_config_are_bounded_before_use(tmp_path, baseline_peak, change, field) -> None:
    rc, err, peak = _export(tmp_path, _config(tmp_path, change))
    _one_line(err, rc, "cfg.yaml", field)
    assert peak < 2 * baseline_peak
    assert not (tmp_path / "out").exists()


def test_numbers_at_their_maximum_are_taken(tmp_path) -> None:
    from pocketcli.config import ConfigError, ModelConfig

    raw = yaml.safe_load(TINY_CONFIG.read_text())
    raw["flow_lm"]["transformer"]["num_layers"] = 96
    raw["mimi"]["transformer"]["context"] = 1 << 16
    ModelConfig.from_dict(raw)
    raw["flow_lm"]["transformer"]["num_layers"] = 97
    with pytest.raises(ConfigError, match="num_layers"):
        ModelConfig.from_dict(raw)


def test_a_yaml_alias_bomb_is_refused_before_it_grows(tmp_path, baseline_peak) -> None:
    rows = ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        rows.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
    bomb = tmp_path / "cfg.yaml"
    bomb.write_text("\n".join(rows) + "\n")
    rc, err, peak = _export(tmp_path, bomb)
    _one_line(err, rc, "cfg.yaml", "aliases")
    assert peak < 2 * baseline_peak


@pytest.mark.parametrize(
    "name", ["../../../../etc/passwd", "../tokenizer.model", "x/../../t.model"]
)
def test_a_tokenizer_outside_the_configs_folder_is_refused(tmp_path, name) -> None:
    (tmp_path / "tokenizer.model").write_bytes(TINY_TOKENIZER.read_bytes())
    folder = tmp_path / "configs"
    folder.mkdir()
    config = _config(folder, _set(("flow_lm", "lookup_table"), "tokenizer_path", name))
    rc, err, _ = _export(tmp_path, config)
    _one_line(err, rc, "tokenizer_path", "outside")
    assert not (tmp_path / "out").exists()


def test_a_file_that_is_no_tokenizer_is_not_exported(tmp_path) -> None:
    (tmp_path / "passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
    config = _config(tmp_path, _set(("flow_lm", "lookup_table"), "tokenizer_path", "passwd"))
    rc, err, _ = _export(tmp_path, config)
    _one_line(err, rc, "passwd")
    assert not (tmp_path / "out").exists()


def test_an_export_records_no_path_of_this_machine(tmp_path) -> None:
    rc, err, _ = _export(tmp_path, _config(tmp_path))
    assert rc == 0, err
    for name in ("pockettts.json", "bundle.json"):
        text = (tmp_path / "out" / name).read_text()
        assert str(tmp_path) not in text and str(FIXTURE) not in text, name


@pytest.mark.parametrize("positions", [1_000_000_000, 1_000_000])
def test_a_bundle_state_past_its_bound_is_refused_before_allocating(
    tmp_path, baseline_peak, positions
) -> None:
    bundle = copy_of_bundle(tmp_path)
    meta = json.loads((bundle / "bundle.json").read_text())
    meta["flow_lm_state_manifest"][0]["shape"] = [2, 1, positions, 4, 16]
    (bundle / "bundle.json").write_text(json.dumps(meta))
    rc, err, peak = _tts(bundle, tmp_path)
    _one_line(err, rc, "bundle.json", "flow_lm_state_manifest")
    assert peak < 2 * baseline_peak


@pytest.mark.parametrize(
    "shape, ok",
    [
        ([1, 16, 1_000_000_000], False),  # one dimension past 65536
        ([4096, 4096], False),  # dimensions within, 2^24 numbers: past 2^22
        ([1] * 9, False),  # more than 8 dimensions
        ([1, -1], False),
        ([1, "16"], False),
        ([65536, 64], True),  # exactly 2^22 numbers
        ([1, 65536], True),
    ],
)
def test_a_state_shape_is_bounded_when_read(shape, ok) -> None:
    """Where a graph's state sizes are not fixed, the description's are all there is."""
    from pocketcli.config import ConfigError
    from pocketcli.packs.state_spec import StateSpec

    if ok:
        assert StateSpec.from_dict({"name": "s", "shape": shape}).shape == tuple(shape)
    else:
        with pytest.raises(ConfigError, match="state 's'"):
            StateSpec.from_dict({"name": "s", "shape": shape})
