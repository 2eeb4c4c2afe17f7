"""The catalog is data that agrees with its sources: pocket-tts 4.0.1 and FluidAudio's packs."""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import re
from pathlib import Path

import pytest
import yaml

from pocketcli import store
from pocketcli.config import ModelConfig
from pocketcli.store.catalog import catalog
from pocketcli.store.fetch import HfRef

CONFIGS = Path(store.__file__).parent.parent / "data" / "configs"
FLUIDAUDIO_LANGUAGES = (
    "english",
    "french_24l",
    "german",
    "german_24l",
    "italian",
    "italian_24l",
    "portuguese",
    "portuguese_24l",
    "spanish",
    "spanish_24l",
)
ENGLISH_TRAINED = [
    "alba",
    "anna",
    "azelma",
    "bill_boerst",
    "caro_davy",
    "charles",
    "cosette",
    "eponine",
    "eve",
    "fantine",
    "george",
    "jane",
    "javert",
    "jean",
    "marius",
    "mary",
    "michael",
    "paul",
    "peter_yearsley",
    "stuart_bell",
    "vera",
]
NATIVE = {
    "estelle": "french",
    "lola": "spanish",
    "juergen": "german",
    "rafael": "portuguese",
    "giovanni": "italian",
}
COMMIT = re.compile(r"[0-9a-f]{40}")


@pytest.fixture(autouse=True)
def _no_real_hub(tmp_path, monkeypatch) -> None:
    """Should a name check ever let a call through, it must not reach any real server."""
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("POCKETTTS_CACHE", str(tmp_path / "pockettts-cache"))


def pocket_tts_dir() -> Path:
    """pocket-tts's installed files, read as text: importing it would import torch."""
    spec = importlib.util.find_spec("pocket_tts")
    if spec is None or spec.origin is None:
        pytest.skip("pocket-tts is not installed")
    return Path(spec.origin).parent


def pocket_tts_literal(module: str, name: str):
    """A module-level literal of pocket-tts (a dict of voices, say), without importing it."""
    tree = ast.parse((pocket_tts_dir() / module).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            return ast.literal_eval(node.value)
    raise LookupError(f"{name} not in pocket_tts/{module}")


def test_coreml_languages_are_fluidaudios_ten_in_its_order() -> None:
    assert store.known_languages("coreml") == FLUIDAUDIO_LANGUAGES
    for name, layers in catalog().coreml.languages.items():
        assert layers == (24 if name.endswith("_24l") else 6)
        # Each FluidAudio pack converts the Kyutai model of the same name.
        assert catalog().kyutai[name].layers == layers


def test_onnx_languages_are_every_config_pocket_tts_ships() -> None:
    shipped = sorted(p.stem for p in (pocket_tts_dir() / "config").glob("*.yaml"))
    assert list(store.known_languages("onnx")) == shipped
    assert len(shipped) == 27
    assert set(FLUIDAUDIO_LANGUAGES) <= set(shipped)


def test_config_copies_are_byte_identical_to_pocket_tts() -> None:
    source = pocket_tts_dir() / "config"
    for ours in sorted(CONFIGS.glob("*.yaml")):
        assert ours.read_bytes() == (source / ours.name).read_bytes(), ours.name
    sources = (CONFIGS / "SOURCES.md").read_text(encoding="utf-8")
    for ours in sorted(CONFIGS.glob("*.yaml")):
        assert hashlib.sha256(ours.read_bytes()).hexdigest() in sources, ours.name


def test_catalog_restates_each_config_with_pinned_revisions() -> None:
    for entry in catalog().kyutai.values():
        raw = yaml.safe_load(entry.config_path().read_text(encoding="utf-8"))
        assert entry.weights == raw["weights_path"]
        assert entry.weights_without_voice_cloning == raw["weights_path_without_voice_cloning"]
        assert entry.tokenizer == raw["flow_lm"]["lookup_table"]["tokenizer_path"]
        assert entry.layers == raw["flow_lm"]["transformer"]["num_layers"]
        for url in (entry.weights, entry.weights_without_voice_cloning, entry.tokenizer):
            ref = HfRef.parse(url)
            assert ref.revision is not None and COMMIT.fullmatch(ref.revision), url
        assert HfRef.parse(entry.weights).repo == catalog().gated_repo
        assert HfRef.parse(entry.weights_without_voice_cloning).repo != catalog().gated_repo
        ModelConfig.from_yaml(entry.config_path())  # every config is one we can build


def test_voice_state_url_is_pocket_tts_one() -> None:
    source = (pocket_tts_dir() / "utils" / "utils.py").read_text(encoding="utf-8")
    function = source[source.index("def get_predefined_voice") :]
    pattern = re.search(r'f"(hf://[^"]+)"', function).group(1)
    assert catalog().voice_state == pattern.replace("{name}", "{voice}")


def test_voices_and_their_origins() -> None:
    voices = catalog().voices
    assert list(store.known_voices("english")) == ENGLISH_TRAINED + list(NATIVE)
    for name in ENGLISH_TRAINED:
        assert voices[name].origin == "english"
    for name, origin in NATIVE.items():
        assert voices[name].origin == origin
    assert voices["daan"].origin == "dutch"
    assert "daan" in store.known_voices("dutch_24l")
    assert all("daan" not in store.known_voices(lang) for lang in FLUIDAUDIO_LANGUAGES)
    origins = pocket_tts_literal("utils/utils.py", "_ORIGINS_OF_PREDEFINED_VOICES")
    assert set(voices) == set(origins)
    for name, voice in voices.items():
        assert voice.audio == origins[name]


def test_native_voices_follow_pocket_tts_defaults() -> None:
    defaults = pocket_tts_literal("default_parameters.py", "DEFAULT_VOICE_FOR_LANGUAGE")
    assert catalog().native_voices == defaults
    assert store.native_voice("spanish_24l") == "lola"
    assert store.native_voice("dutch") == "daan"
    assert store.native_voice("english_2026-04") is None


def test_fluidaudio_default_name_is_alba() -> None:
    assert store.canonical_voice("af_heart") == "alba"
    assert store.check_voice("AF_HEART", "spanish") == "alba"


def test_coreml_files_per_precision_and_placement() -> None:
    cml = catalog().coreml
    assert cml.repo == "FluidInference/pocket-tts-coreml"
    assert cml.language_dir("german_24l") == "v2.1/german_24l"
    assert cml.models("fp16", "gpu") == (
        "cond_prefill.mlmodelc",
        "flowlm_step.mlmodelc",
        "flow_decoder_fused.mlmodelc",
        "mimi_decoder.mlmodelc",
    )
    assert cml.models("int8", "gpu")[1] == "flowlm_stepv2.mlmodelc"
    assert cml.models("int8", "ane") == (
        "cond_prefill_ane.mlmodelc",
        "flowlm_step_ane.mlmodelc",
        "flow_decoder_fused.mlmodelc",
        "mimi_decoder.mlmodelc",
    )
    assert cml.unused_flowlm("fp16") == ("flowlm_stepv2.mlmodelc",)
    assert cml.unused_flowlm("int8") == ("flowlm_step.mlmodelc",)


@pytest.mark.parametrize(
    "call, field, listed",
    [
        (lambda: store.check_language("coreml", "dutch"), "language", "spanish_24l"),
        (lambda: store.check_language("onnx", "klingon"), "language", "english_2026-04"),
        (lambda: store.check_precision("onnx", "fp16"), "precision", "fp32, int8"),
        (lambda: store.check_precision("coreml", "fp32"), "precision", "fp16, int8"),
        (lambda: store.check_voice("bob", "english"), "voice", "stuart_bell"),
        (lambda: store.check_voice("daan", "german"), "voice", "giovanni"),
        (lambda: store.check_placement("ane-state"), "placement", "gpu, ane"),
        (lambda: store.resolve_voice("english", "bob"), "voice", "alba"),
        (lambda: store.resolve_coreml_pack("french"), "language", "french_24l"),
        (lambda: store.resolve_onnx_pack("english", None, "fp16"), "precision", "int8"),
    ],
)
def test_unknown_names_list_the_valid_ones(call, field, listed) -> None:
    with pytest.raises(store.UnknownNameError) as info:
        call()
    assert info.value.field == field  # the library names fields; the CLI maps them to flags
    assert "--" not in str(info.value)
    assert listed in str(info.value)
    assert "\n" not in str(info.value)
