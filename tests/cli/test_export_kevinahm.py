"""KevinAHM v2 bundles from the command line: export, speak, inspect, and broken bundles."""

from __future__ import annotations

import json
import os

import numpy as np
import onnx
import pytest
import soundfile as sf
import yaml

from pocketcli.api import PocketTTS
from pocketcli.packs.onnx_graph import GraphBuilder
from pocketcli.runtimes.kevinahm import BundleError
from tests.support.bundlehelp import TINY_CONFIG, TINY_MODEL, TINY_TOKENIZER, copy_of_bundle
from tests.support.cli import run


def one_line_error(r, *words: str) -> str:
    err = r.stderr.decode()
    assert r.returncode == 1, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("pockettts: error:")]
    assert len(lines) == 1, err
    for word in words:
        assert word in lines[0], err
    return lines[0]


def test_export_then_speak_clone_and_inspect(tmp_path, fixture_dir) -> None:
    config = yaml.safe_load(TINY_CONFIG.read_text())
    config["weights_path"] = str(TINY_MODEL)
    config["flow_lm"]["lookup_table"]["tokenizer_path"] = str(TINY_TOKENIZER)
    (tmp_path / "my_model.yaml").write_text(yaml.safe_dump(config))
    out = tmp_path / "bundles" / "mine"
    out.parent.mkdir()  # a missing parent is refused, never created
    r = run("export", "--format", "kevinahm-v2", str(out), "--config",
            str(tmp_path / "my_model.yaml"), "-q", cache=tmp_path / "cache")  # fmt: skip
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout.decode().strip() == str(out)
    names = sorted(p.name for p in out.iterdir())
    for graph in (
        "text_conditioner",
        "mimi_encoder",
        "flow_lm_main",
        "flow_lm_flow",
        "mimi_decoder",
    ):
        assert f"{graph}.onnx" in names and f"{graph}_int8.onnx" in names
    assert json.loads((out / "bundle.json").read_text())["bundle_name"] == "my_model"
    assert not [n for n in os.listdir(out.parent) if n.startswith(".")]  # no leftovers

    wav = tmp_path / "a.wav"
    r = run("tts", "Hello from a bundle.", "--model-dir", str(out), "--precision", "int8",
            "--clone-voice", str(fixture_dir / "clone_prompt_24k.wav"), "-o", str(wav), "-q",
            cache=tmp_path / "cache")  # fmt: skip
    assert r.returncode == 0, r.stderr.decode()
    audio, rate = sf.read(wav)
    assert rate == 24000 and audio.size > 0 and np.abs(audio).max() > 0

    r = run("inspect", str(out), cache=tmp_path / "cache")
    text = r.stdout.decode()
    assert r.returncode == 0, r.stderr.decode()
    assert "KevinAHM v2 ONNX bundle" in text and "precisions: fp32, int8" in text
    assert "languages: my_model" in text and "voice cloning: yes" in text
    report = json.loads(run("inspect", str(out), "--json", cache=tmp_path / "cache").stdout)
    assert report["layout"] == "kevinahm-v2" and report["flow_lm_layers"] == 2
    assert report["bytes_by_precision"]["int8"] < report["bytes_by_precision"]["fp32"]


def test_export_without_cloning_weights_has_no_encoder_and_says_so(tmp_path) -> None:
    from safetensors.numpy import load_file, save_file

    from pocketcli.cli.inspect_folder import describe_folder
    from pocketcli.config import ModelConfig
    from pocketcli.packs.kevinahm.export import export_bundle

    weights = load_file(str(TINY_MODEL))
    for name in weights:
        if name.startswith("mimi.encoder."):
            weights[name] = np.zeros_like(weights[name])
    save_file(weights, str(tmp_path / "public.safetensors"))
    said: list[str] = []
    out = export_bundle(tmp_path / "public.safetensors", ModelConfig.from_yaml(TINY_CONFIG),
                        TINY_TOKENIZER, tmp_path / "public", "public", ("fp32",),
                        progress=said.append)  # fmt: skip
    assert any("no mimi_encoder" in line for line in said)
    assert (
        not (out / "mimi_encoder.onnx").exists() and not (out / "flow_lm_main_int8.onnx").exists()
    )
    report = describe_folder(out)
    assert report["voice_cloning"] is False and report["precisions"] == ["fp32"]
    tts = PocketTTS.open(runtime="onnx", model_dir=out)
    assert not tts.voices.cloning_available


def test_export_refuses_unknown_formats_as_usage_errors(tmp_path) -> None:
    r = run("export", "--format", "web2", str(tmp_path / "x"), cache=tmp_path / "cache")
    assert r.returncode == 2 and "kevinahm-v2" in r.stderr.decode()


# -- broken bundles: one line naming the file and the problem ------------------------
def _tts(bundle, tmp_path, *extra):
    return run("tts", "Hi.", "--model-dir", str(bundle), "--voice-file",
               str(TINY_MODEL.parent / "voice.safetensors"), "-o", str(tmp_path / "o.wav"), *extra,
               cache=tmp_path / "cache")  # fmt: skip


def test_missing_graph(tmp_path) -> None:
    bundle = copy_of_bundle(tmp_path)
    (bundle / "flow_lm_flow.onnx").unlink()
    one_line_error(_tts(bundle, tmp_path), "flow_lm_flow.onnx is missing")
    assert not (tmp_path / "o.wav").exists()


def load_error(bundle, *words: str) -> str:
    """What ``--model-dir`` prints for the bundle (the library's error, as one line)."""
    with pytest.raises(BundleError) as caught:
        PocketTTS.open(runtime="onnx", model_dir=bundle)
    message = str(caught.value)
    assert "\n" not in message
    for word in words:
        assert word in message
    return message


def test_truncated_graph(tmp_path) -> None:
    bundle = copy_of_bundle(tmp_path)
    data = (bundle / "mimi_decoder.onnx").read_bytes()
    (bundle / "mimi_decoder.onnx").write_bytes(data[: len(data) // 2])
    load_error(bundle, "cannot load", "mimi_decoder.onnx")


def _edit(bundle, change) -> None:
    meta = json.loads((bundle / "bundle.json").read_text())
    change(meta)
    (bundle / "bundle.json").write_text(json.dumps(meta))


def test_manifest_that_does_not_match_the_graph(tmp_path) -> None:
    bundle = copy_of_bundle(tmp_path)
    _edit(bundle, lambda m: m["mimi_state_manifest"][1].update(shape=[1, 64, 7]))
    line = load_error(bundle, "bundle.json does not match mimi_decoder.onnx")
    assert "decoder.model.0/previous" in line
    _edit(bundle, lambda m: m["mimi_state_manifest"].pop())
    load_error(bundle, "state inputs")


@pytest.mark.parametrize("name", ["../tokenizer.model", "/etc/passwd", "link.model"])
def test_paths_from_bundle_json_stay_inside_the_folder(tmp_path, name) -> None:
    bundle = copy_of_bundle(tmp_path)
    (tmp_path / "tokenizer.model").write_bytes((bundle / "tokenizer.model").read_bytes())
    (bundle / "link.model").symlink_to(tmp_path / "tokenizer.model")
    _edit(bundle, lambda m: m.update(tokenizer_file=name))
    load_error(bundle, "tokenizer_file", "outside the bundle folder")


def test_unreadable_bundle_json_and_wrong_schema(tmp_path) -> None:
    bundle = copy_of_bundle(tmp_path)
    (bundle / "bundle.json").write_text("{not json")
    load_error(bundle, "cannot read", "bundle.json")
    (bundle / "bundle.json").write_text(json.dumps({"schema_version": 1}))
    load_error(bundle, "schema_version is 1")


def test_shapes_that_do_not_fit_the_tokenizer_or_the_voice(tmp_path) -> None:
    bundle = copy_of_bundle(tmp_path)
    _edit(bundle, lambda m: m.update(latent_dim=16))
    load_error(bundle, "latent_dim is 16")
    _edit(bundle, lambda m: m.update(latent_dim=32))
    # A text table with fewer rows than the tokenizer has pieces.
    g = GraphBuilder("text_conditioner")
    ids = g.input("token_ids", np.int64, [1, "seq_len"])
    table = g.weight("table", np.zeros((100, 64), np.float32))
    g.output(g.op("Gather", [table, ids], axis=0), "embeddings", np.float32, [1, "seq_len", 64])
    onnx.save(g.model(), str(bundle / "text_conditioner.onnx"))
    load_error(bundle, "tokenizer.model has 4000 pieces", "text_conditioner")


def test_a_voice_of_another_model_size_is_refused(tmp_path) -> None:
    from pocketcli.voices.state import VoiceError, VoiceState

    tts = PocketTTS.open(runtime="onnx", model_dir=copy_of_bundle(tmp_path))
    keys = tuple(np.zeros((3, 4, 16), np.float32) for _ in range(3))
    with pytest.raises(VoiceError, match="3 layers but the model has 2"):
        tts.synthesize("Hi.", VoiceState(keys, keys))
