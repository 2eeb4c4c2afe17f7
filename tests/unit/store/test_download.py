"""Downloads through the real huggingface_hub client, against a fake Hub on 127.0.0.1."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import huggingface_hub.constants
import numpy as np
import pytest

from pocketcli import store
from pocketcli.errors import UserError
from pocketcli.options import SpeakOptions
from pocketcli.packs.manifest import PackManifest
from pocketcli.store.errors import StoreError
from tests.support.fakehub import (
    BF16_STATE_VOICE,
    CLONING,
    COREML,
    NO_CLONING,
    REAL_PROMPT_VOICE,
    TINY,
    TINY_BF16_CONFIG,
    TINY_CONFIG,
    TINY_PROMPT_VOICE,
    TOKENIZER_MODEL,
    FakeHub,
    add_coreml,
    add_kyutai,
    hub_env,
    running,
)

VOICE_KEY = f"{NO_CLONING}/languages/english/embeddings/alba.safetensors"
VOICE_REVISION = "a7056f505a4a8ca72d8b5fb1440071d6f1a35739"


@pytest.fixture
def hub(tmp_path, monkeypatch):
    fake = FakeHub()
    add_kyutai(fake)
    add_coreml(fake)
    with running(fake):
        for key in ("HF_HUB_CACHE", "HF_ASSETS_CACHE", "HF_HUB_OFFLINE", "HF_TOKEN"):
            monkeypatch.delenv(key, raising=False)
        for key, value in hub_env(fake, tmp_path).items():
            monkeypatch.setenv(key, value)
        # huggingface_hub read this on import; its telemetry would call its default endpoint.
        monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_DISABLE_TELEMETRY", True)
        only_loopback(monkeypatch)
        yield fake


def only_loopback(monkeypatch) -> None:
    """Any attempt to resolve another host than 127.0.0.1 fails, as if there were no DNS."""
    real = socket.getaddrinfo

    def guarded(host, *args, **kwargs):
        if host not in ("127.0.0.1", b"127.0.0.1"):
            raise socket.gaierror(socket.EAI_NONAME, f"tests only reach 127.0.0.1, not {host}")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", guarded)


def blobs(tmp_path: Path, repo: str) -> list[Path]:
    folder = tmp_path / "hf-home" / "hub" / f"models--{repo.replace('/', '--')}" / "blobs"
    return sorted(folder.iterdir()) if folder.is_dir() else []


def one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text and "Traceback" not in text
    return text


# --- voices and the cache ---------------------------------------------------------------


def test_voice_comes_from_the_pinned_revision_then_from_the_cache(hub) -> None:
    path = store.resolve_voice("english", "af_heart")
    assert path.read_bytes() == (TINY / "voice.safetensors").read_bytes()
    fetched = hub.requests("embeddings/alba.safetensors")
    assert any(f"/resolve/{VOICE_REVISION}/languages/english/" in r.path for r in fetched)
    hub.clear_log()
    assert store.resolve_voice("english", "alba") == path
    assert store.resolve_voice("english", "alba", offline=True) == path
    assert hub.requests() == []


def test_offline_without_cache_says_how_to_fill_it_and_sends_nothing(hub, monkeypatch) -> None:
    with pytest.raises(StoreError) as info:
        store.resolve_voice("english", "eve", offline=True)
    text = one_line(info.value)
    # The library names the setting, not a CLI flag (a Python caller never typed one).
    assert "drop offline" in text and "--offline" not in text
    assert "pockettts download" in text and "--voice eve" in text
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for call in (
        lambda: store.resolve_coreml_pack("english"),
        lambda: store.resolve_onnx_pack(None, TINY_CONFIG),
    ):
        with pytest.raises(StoreError, match="HF_HUB_OFFLINE"):
            call()
    assert hub.requests() == []


def test_unpublished_voice_is_a_404_that_lists_the_voices(hub) -> None:
    hub.missing.add(f"{NO_CLONING}/languages/english/embeddings/eve.safetensors")
    with pytest.raises(StoreError) as info:
        store.resolve_voice("english", "eve")
    text = one_line(info.value)
    assert "voice 'eve' is not published for english" in text
    assert "stuart_bell" in text and "giovanni" in text


# --- network faults ---------------------------------------------------------------------


def test_dropped_connection_resumes_with_range_and_the_file_is_whole(hub, tmp_path) -> None:
    # huggingface_hub writes in 10 MiB chunks and resumes from the last whole one,
    # so the file must be larger than that for the resume to start past zero.
    data = np.random.default_rng(3).integers(0, 256, 12 << 20, dtype=np.uint8).tobytes()
    path_in_repo = "languages/english/embeddings/marius.safetensors"
    hub.add(NO_CLONING, path_in_repo, data)
    hub.drop_after[f"{NO_CLONING}/{path_in_repo}"] = 11 << 20
    path = store.resolve_voice("english", "marius")
    assert path.read_bytes() == data
    cdn = [r for r in hub.requests("/cdn/") if r.method == "GET"]
    assert len(cdn) == 2 and cdn[0].range is None
    start = int(cdn[1].range.removeprefix("bytes=").removesuffix("-"))
    assert 0 < start < len(data)
    assert not [b for b in blobs(tmp_path, NO_CLONING) if b.name.endswith(".incomplete")]


def test_download_cut_by_a_previous_run_resumes_from_its_partial_file(hub) -> None:
    """A crashed or Ctrl-C'd run leaves <store>/partial/<sha256>.part; the next run
    asks only for the rest (Range) and the result is checked and complete."""
    from pocketcli.store.resume import partial_path
    from tests.support.fakehub import sha256

    data = np.random.default_rng(4).integers(0, 256, 3 << 20, dtype=np.uint8).tobytes()
    path_in_repo = "languages/english/embeddings/paul.safetensors"
    hub.add(NO_CLONING, path_in_repo, data)
    partial = partial_path(sha256(data))
    partial.parent.mkdir(parents=True, exist_ok=True)
    partial.write_bytes(data[:1_000_000])
    path = store.resolve_voice("english", "paul")
    assert path.read_bytes() == data
    gets = [r for r in hub.requests("/cdn/") if r.method == "GET"]
    assert [r.range for r in gets] == ["bytes=1000000-"]
    assert not partial.exists()
    hub.clear_log()
    assert store.resolve_voice("english", "paul", offline=True).read_bytes() == data
    assert hub.requests() == []


def test_partial_file_with_wrong_bytes_is_refused_and_removed(hub) -> None:
    from pocketcli.store.resume import partial_path
    from tests.support.fakehub import sha256

    data = np.random.default_rng(5).integers(0, 256, 1 << 20, dtype=np.uint8).tobytes()
    path_in_repo = "languages/english/embeddings/vera.safetensors"
    hub.add(NO_CLONING, path_in_repo, data)
    partial = partial_path(sha256(data))
    partial.parent.mkdir(parents=True, exist_ok=True)
    partial.write_bytes(b"\x00" * 1000)  # not the file's first bytes
    with pytest.raises(StoreError, match="corrupted"):
        store.resolve_voice("english", "vera")
    assert not partial.exists()
    assert store.resolve_voice("english", "vera").read_bytes() == data


def test_stalled_server_hits_the_deadline(hub, monkeypatch) -> None:
    monkeypatch.setenv("POCKETTTS_HUB_TIMEOUT", "0.5")
    hub.hang = True
    with pytest.raises(StoreError) as info:
        store.resolve_voice("english", "alba")
    text = one_line(info.value)
    assert "no answer from 127.0.0.1" in text and "within 0.5 s" in text
    assert "POCKETTTS_HUB_TIMEOUT" in text and "work offline" in text
    with pytest.raises(StoreError, match="no answer"):
        store.resolve_coreml_pack("english")


def test_trickling_server_hits_the_speed_limit_and_the_download_resumes(hub, monkeypatch):
    """A byte every 0.2 s never trips the read deadline (it restarts on every byte);
    the low-speed limit stops it with one line, and the next run completes it. Trickled
    whole, the file would take 10000 s: the limit must stop it long before (waited for
    up to 60 s on a loaded machine, never timed), having received only a few bytes."""
    import re
    from concurrent.futures import ThreadPoolExecutor
    from concurrent.futures import TimeoutError as StillRunning

    from pocketcli.store.resume import partial_path
    from tests.support.fakehub import sha256

    monkeypatch.setenv("POCKETTTS_HUB_TIMEOUT", "1")
    monkeypatch.setenv("POCKETTTS_HUB_SPEED_LIMIT", "100")
    monkeypatch.setenv("POCKETTTS_HUB_SPEED_TIME", "1.5")
    data = np.random.default_rng(6).integers(0, 256, 50_000, dtype=np.uint8).tobytes()
    path_in_repo = "languages/english/embeddings/jean.safetensors"
    hub.add(NO_CLONING, path_in_repo, data)
    hub.trickle[f"{NO_CLONING}/{path_in_repo}"] = 0.2
    with ThreadPoolExecutor(1) as pool:
        fetch = pool.submit(store.resolve_voice, "english", "jean")
        try:
            error = fetch.exception(timeout=60)
        except StillRunning:
            hub.stop.set()  # end the trickle so the thread and the test can finish
            pytest.fail("the speed limit did not stop a download at 5 bytes/s")
    assert isinstance(error, StoreError), error
    text = one_line(error)
    assert "POCKETTTS_HUB_SPEED_LIMIT" in text
    received = int(re.search(r"sent only (\d+) bytes", text).group(1))
    assert 0 < received < len(data) // 100
    del hub.trickle[f"{NO_CLONING}/{path_in_repo}"]
    assert store.resolve_voice("english", "jean").read_bytes() == data
    assert not partial_path(sha256(data)).exists()


@pytest.mark.parametrize("name", ["POCKETTTS_HUB_SPEED_LIMIT", "POCKETTTS_HUB_SPEED_TIME"])
def test_a_bad_speed_setting_is_a_user_error(hub, monkeypatch, name) -> None:
    monkeypatch.setenv(name, "-3")
    with pytest.raises(UserError, match=name):
        store.resolve_voice("english", "jean")


def test_refused_connection_is_one_line(hub, monkeypatch) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # free once closed: nothing listens there
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    with pytest.raises(StoreError) as info:
        store.resolve_voice("english", "alba")
    assert f"cannot connect to 127.0.0.1:{port}" in one_line(info.value)


def test_corrupted_file_is_refused_deleted_and_fetched_again(hub, tmp_path) -> None:
    hub.corrupt.add(VOICE_KEY)
    with pytest.raises(StoreError) as info:
        store.resolve_voice("english", "alba")
    assert "corrupted" in one_line(info.value)
    assert blobs(tmp_path, NO_CLONING) == []
    with pytest.raises(StoreError, match="not in the cache"):
        store.resolve_voice("english", "alba", offline=True)
    hub.corrupt.clear()
    path = store.resolve_voice("english", "alba")
    assert path.read_bytes() == (TINY / "voice.safetensors").read_bytes()


def test_a_blob_cached_but_never_checked_is_checked_before_use(hub, tmp_path) -> None:
    path = store.resolve_voice("english", "alba")
    for mark in (tmp_path / "pockettts-cache" / "verified").iterdir():
        mark.unlink()  # as if the process died between download and check
    blob = Path(os.path.realpath(path))
    blob.write_bytes(b"x" + blob.read_bytes()[1:])
    with pytest.raises(StoreError, match="corrupted"):
        store.resolve_voice("english", "alba", offline=True)
    assert not blob.exists()


# --- ONNX packs ---------------------------------------------------------------------------


def test_onnx_pack_is_built_once_then_reused(hub) -> None:
    pack = store.resolve_onnx_pack(None, TINY_CONFIG, "fp32")
    manifest = PackManifest.read(pack)
    assert manifest.precisions == ("fp32",)
    assert manifest.source["weights"].startswith(f"hf://{CLONING}/")
    assert manifest.source["voice_cloning_weights"] is True
    stamp = (pack / "pack.json").stat().st_mtime_ns
    hub.clear_log()
    assert store.resolve_onnx_pack(None, TINY_CONFIG, "fp32") == pack
    assert store.resolve_onnx_pack(None, TINY_CONFIG, "fp32", offline=True) == pack
    assert (pack / "pack.json").stat().st_mtime_ns == stamp
    assert hub.requests() == []
    # Another precision rebuilds from the cached checkpoint, offline, keeping both.
    assert store.resolve_onnx_pack(None, TINY_CONFIG, "int8", offline=True) == pack
    assert PackManifest.read(pack).precisions == ("fp32", "int8")
    assert hub.requests() == []


def test_a_stored_pack_of_an_older_format_is_rebuilt_offline(hub) -> None:
    """A pockettts upgrade that changes the pack format rebuilds from the cached weights."""
    pack = store.resolve_onnx_pack(None, TINY_CONFIG, "fp32")
    manifest = pack / "pack.json"
    manifest.write_text(manifest.read_text().replace('"version": 2', '"version": 1'))
    hub.clear_log()
    assert store.resolve_onnx_pack(None, TINY_CONFIG, "fp32", offline=True) == pack
    assert PackManifest.read(pack).precisions == ("fp32",)
    assert hub.requests() == []


def test_gated_weights_fall_back_to_the_ungated_ones_with_a_note(hub, capsys) -> None:
    hub.gated.add(CLONING)
    pack = store.resolve_onnx_pack(None, TINY_CONFIG, "fp32", progress=True)
    manifest = PackManifest.read(pack)
    assert manifest.source["weights"].startswith(f"hf://{NO_CLONING}/")
    assert manifest.source["voice_cloning_weights"] is False
    err = capsys.readouterr().err
    assert "note: the Hub refused kyutai/pocket-tts (HTTP 401)" in err
    assert "https://huggingface.co/kyutai/pocket-tts" in err and "hf auth login" in err
    assert "voice cloning is unavailable" in err


def test_both_weights_refused_says_how_to_get_access(hub) -> None:
    hub.gated.add(CLONING)
    hub.forbidden.add(NO_CLONING)
    with pytest.raises(StoreError) as info:
        store.resolve_onnx_pack(None, TINY_CONFIG, "fp32")
    text = one_line(info.value)
    assert "accept the terms at https://huggingface.co/kyutai/pocket-tts" in text
    assert "`hf auth login`" in text and "refused too" in text


def test_bf16_checkpoint_and_voices_of_every_format_from_the_hub(hub) -> None:
    """Kyutai publishes BF16 checkpoints and voices in several formats: download, build, speak."""
    from safetensors.numpy import load_file

    from pocketcli import PocketTTS
    from pocketcli.voices.prompt import VoiceWarning
    from pocketcli.voices.state import VoiceError
    from tests.support.tensorfiles import bf16_round

    pack = store.resolve_onnx_pack(None, TINY_BF16_CONFIG, "fp32")
    assert "/tiny_bf16/model.safetensors@" in PackManifest.read(pack).source["weights"]
    constants = load_file(str(pack / "constants.safetensors"))
    fixture = load_file(str(TINY / "model.safetensors"))
    assert np.array_equal(constants["emb_std"], bf16_round(fixture["flow_lm.emb_std"]))
    tts = PocketTTS.open(runtime="onnx", model_dir=pack)

    with pytest.warns(VoiceWarning, match="ignored 1 tensor.*extra/notes"):
        state = tts.voices.load(store.resolve_voice("english", BF16_STATE_VOICE))
    reference = load_file(str(TINY / "voice.safetensors"))
    cache = reference["transformer.layers.0.self_attn/cache"]
    assert np.array_equal(state.keys[0], bf16_round(cache[0, 0, : state.length]))
    prompt = tts.voices.load(store.resolve_voice("english", TINY_PROMPT_VOICE))
    assert prompt.conditioning is not None and prompt.conditioning.shape == (20, 64)
    for voice in (state, prompt):
        audio = tts.synthesize("Hello there.", voice, options=SpeakOptions(seed=1))
        assert audio.size and np.isfinite(audio).all() and np.abs(audio).max() > 0
    real = store.resolve_voice("english", REAL_PROMPT_VOICE)
    with pytest.raises(VoiceError, match="1024 wide .* this model's d_model is 64") as info:
        tts.voices.load(real)
    one_line(info.value)


def test_catalog_language_fetches_kyutai_files_at_pocket_tts_revisions(hub, tmp_path) -> None:
    # The fake Hub serves the tiny checkpoint (in BF16, as Kyutai does) as "english", which
    # the real english config refuses to build once the file is read; what matters here
    # is that reading passed, what was fetched, and from where.
    with pytest.raises(UserError, match="checkpoint lacks"):
        store.resolve_onnx_pack("english", None, "fp32")
    paths = [r.path for r in hub.requests("/resolve/")]
    assert (
        f"/{CLONING}/resolve/db04f0e653473e5c7333c69686ac92b7460b0c1d/"
        "languages/english/model.safetensors"
    ) in paths
    assert (
        f"/{NO_CLONING}/resolve/00eac05ed3d16bdc3f6b5d598874019c34a89214/"
        "languages/english/tokenizer.json"
    ) in paths
    assert not (tmp_path / "pockettts-cache" / "packs" / "onnx" / "english").exists()


def test_config_by_url_and_by_local_path(hub, tmp_path) -> None:
    by_url = store.resolve_onnx_pack(None, f"{hub.url}/raw/tiny.yaml", "fp32")
    assert PackManifest.read(by_url).source["config"].endswith("/raw/tiny.yaml")
    # A local config whose weights and tokenizer sit beside it, named relatively.
    local = tmp_path / "mine"
    local.mkdir()
    (local / "model.safetensors").write_bytes((TINY / "model.safetensors").read_bytes())
    (local / "tokenizer.model").write_bytes(TOKENIZER_MODEL.read_bytes())
    text = (TINY / "config.yaml").read_text(encoding="utf-8")
    (local / "config.yaml").write_text("weights_path: model.safetensors\n" + text, encoding="utf-8")
    hub.clear_log()
    pack = store.resolve_onnx_pack(None, str(local / "config.yaml"), "fp32", offline=True)
    assert PackManifest.read(pack).tokenizer_file == "tokenizer.model"
    assert hub.requests() == []


# --- CoreML packs -------------------------------------------------------------------------


def listing(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


def test_coreml_int8_never_fetches_the_fp16_flowlm_and_switching_swaps_it(hub, tmp_path) -> None:
    pack = store.resolve_coreml_pack("english", "int8", "gpu")
    assert pack.parts[-2:] == ("v2.1", "english")
    assert listing(pack) == {
        "cond_prefill.mlmodelc",
        "flowlm_stepv2.mlmodelc",
        "flow_decoder_fused.mlmodelc",
        "mimi_decoder.mlmodelc",
        "constants_bin",
        "manifest.json",
    }
    assert len(list((pack / "constants_bin").glob("*.safetensors"))) == 26
    fetched = " ".join(r.path for r in hub.requests("/resolve/"))
    for never in (
        "flowlm_step.mlmodelc",
        ".mlpackage",
        "/constants/",
        "verify.wav",
        "mimi_encoderv3",
        "_ane",
        "spanish_24l",
    ):
        assert never not in fetched, never
    v2_blobs = set(blobs(tmp_path, COREML))
    hub.clear_log()
    pack16 = store.resolve_coreml_pack("english", "fp16", "gpu")
    assert "flowlm_step.mlmodelc" in listing(pack16)
    assert "flowlm_stepv2.mlmodelc" not in listing(pack16)
    assert "flowlm_stepv2" not in " ".join(r.path for r in hub.requests())
    # The int8 model's blobs went with it.
    assert len(set(blobs(tmp_path, COREML)) - v2_blobs) > 0
    assert len(v2_blobs - set(blobs(tmp_path, COREML))) > 0


def test_coreml_ane_placement_and_offline_reuse(hub) -> None:
    pack = store.resolve_coreml_pack("spanish_24l", "fp16", "ane")
    assert {"cond_prefill_ane.mlmodelc", "flowlm_step_ane.mlmodelc"} <= listing(pack)
    assert not {"flowlm_step.mlmodelc", "flowlm_stepv2.mlmodelc"} & listing(pack)
    hub.clear_log()
    assert store.resolve_coreml_pack("spanish_24l", "fp16", "ane", offline=True) == pack
    assert hub.requests() == []
    with pytest.raises(StoreError, match="not in the cache"):
        store.resolve_coreml_pack("spanish_24l", "fp16", "gpu", offline=True)


def test_voice_statuses_show_what_is_downloaded_without_requests(hub) -> None:
    store.resolve_voice("english", "alba")
    store.resolve_coreml_pack("english", "int8")
    hub.clear_log()
    statuses = {s.name: s for s in store.voice_statuses("english")}
    assert len(statuses) == 26
    assert (statuses["alba"].onnx, statuses["alba"].coreml) == (True, True)
    assert (statuses["eve"].onnx, statuses["eve"].coreml) == (False, True)
    assert statuses["alba"].default and not statuses["lola"].default
    dutch = {s.name: s for s in store.voice_statuses("dutch")}
    assert dutch["daan"].native and dutch["daan"].coreml is None
    assert hub.requests() == []
    assert json.dumps(statuses["eve"].to_dict())


@pytest.mark.parametrize("value", ["abc", "0", "-3"])
def test_a_bad_deadline_setting_is_a_user_error(hub, monkeypatch, value) -> None:
    monkeypatch.setenv("POCKETTTS_HUB_TIMEOUT", value)
    with pytest.raises(UserError, match="POCKETTTS_HUB_TIMEOUT"):
        store.resolve_voice("english", "alba")
    assert hub.requests() == []


def test_dns_failure_is_one_line_that_says_what_to_do(hub, monkeypatch) -> None:
    monkeypatch.setenv("HF_ENDPOINT", "http://hub.pockettts-test.invalid")
    with pytest.raises(StoreError) as info:
        store.resolve_voice("english", "alba")
    text = one_line(info.value)
    assert "cannot resolve hub.pockettts-test.invalid" in text
    assert "work offline" in text
    assert hub.requests() == []


def test_coreml_cloning_encoders_are_fetched_on_demand_then_offline(hub) -> None:
    from tests.support.fakehub import _mlmodelc

    _mlmodelc(hub, "mimi_encoderv2.mlmodelc", 90)
    _mlmodelc(hub, "v2.1/spanish_24l/mimi_encoderv3.mlmodelc", 91)
    hub.add(COREML, "encoder_recover_pinv.bin", np.zeros((1024, 32), np.float32).tobytes())
    pack = store.resolve_coreml_pack("spanish_24l", "fp16")
    assert not (pack / "mimi_encoderv3.mlmodelc").exists()  # not needed to speak
    folder = store.resolve_coreml_encoder("spanish_24l")
    assert folder == pack
    assert (folder / "mimi_encoderv3.mlmodelc" / "coremldata.bin").is_file()
    root = folder.parent.parent
    assert (root / "mimi_encoderv2.mlmodelc" / "coremldata.bin").is_file()
    assert (root / "encoder_recover_pinv.bin").stat().st_size == 1024 * 32 * 4
    hub.clear_log()
    assert store.resolve_coreml_encoder("spanish_24l", offline=True) == folder
    assert hub.requests() == []
