"""A config fetched by URL is not trusted to name local files:
real fetches from the fake Hub on 127.0.0.1 through the real client."""

from __future__ import annotations

import pytest
import yaml

from pocketcli import store
from pocketcli.packs.manifest import PackManifest
from pocketcli.store import fetch
from pocketcli.store.errors import StoreError
from tests.support.fakehub import TINY, TOKENIZER_MODEL
from tests.unit.store.test_download import hub, one_line  # noqa: F401 - the fixture


def _config(**changes: str) -> bytes:
    raw = yaml.safe_load((TINY / "config.yaml").read_text(encoding="utf-8"))
    for key, value in changes.items():
        if key == "tokenizer_path":
            raw["flow_lm"]["lookup_table"]["tokenizer_path"] = value
        else:
            raw[key] = value
    return yaml.safe_dump(raw).encode()


@pytest.mark.parametrize("name", ["/etc/passwd", "file:///etc/passwd", "~/.ssh/id_rsa"])
def test_a_web_config_naming_a_local_file_is_refused(hub, tmp_path, name) -> None:  # noqa: F811
    hub.raw["evil.yaml"] = _config(weights_path=name)
    with pytest.raises(StoreError) as info:
        store.resolve_onnx_pack(None, f"{hub.url}/raw/evil.yaml", "fp32")
    text = one_line(info.value)
    assert "may only name hf:// or https://" in text and name in text
    assert not hub.requests("passwd") and not hub.requests("id_rsa")


def test_relative_names_resolve_against_the_config_url(hub) -> None:  # noqa: F811
    hub.raw["mine/tiny.yaml"] = _config(
        weights_path="weights/model.safetensors", tokenizer_path="tokenizer.model"
    )
    hub.raw["mine/weights/model.safetensors"] = (TINY / "model.safetensors").read_bytes()
    hub.raw["mine/tokenizer.model"] = TOKENIZER_MODEL.read_bytes()
    pack = store.resolve_onnx_pack(None, f"{hub.url}/raw/mine/tiny.yaml", "fp32")
    source = PackManifest.read(pack).source
    assert source["weights"] == f"{hub.url}/raw/mine/weights/model.safetensors"
    assert source["tokenizer"] == f"{hub.url}/raw/mine/tokenizer.model"


def test_hf_config_relative_names_stay_in_its_repo() -> None:
    base = "hf://org/repo/configs/x.yaml@abc"
    assert fetch.resolve_remote_name("../w/model.safetensors", base) == (
        "hf://org/repo/w/model.safetensors@abc"
    )
    with pytest.raises(StoreError, match="may only name"):
        fetch.resolve_remote_name("/abs/model.safetensors", base)


@pytest.mark.parametrize(
    "url",
    ["http://example.com/c.yaml", "ftp://example.com/c.yaml", "http://10.0.0.1/c.yaml"],
)
def test_plain_http_is_refused_unless_loopback(url) -> None:
    with pytest.raises(StoreError, match="only https://"):
        fetch.check_url(url)
    fetch.check_url("http://127.0.0.1:8080/c.yaml")
    fetch.check_url("https://example.com/c.yaml")


def test_a_huge_config_is_refused_before_it_is_read_whole(hub) -> None:  # noqa: F811
    hub.raw["big.yaml"] = b"# padding\n" * 200_000
    with pytest.raises(StoreError, match="larger than 1024 KB"):
        store.resolve_onnx_pack(None, f"{hub.url}/raw/big.yaml", "fp32")


def test_a_cached_config_is_revalidated_after_its_lifetime(hub, monkeypatch) -> None:  # noqa: F811
    url = f"{hub.url}/raw/changing.yaml"
    job = fetch.Fetch(what="config", max_bytes=1 << 20)
    hub.raw["changing.yaml"] = b"one: 1\n"
    from pocketcli.store.progress import Reporter

    with Reporter(False) as reporter:
        first = fetch.fetch_url(url, job, False, reporter)
        hub.raw["changing.yaml"] = b"two: 2\n"
        hub.clear_log()
        assert fetch.fetch_url(url, job, False, reporter).read_bytes() == b"one: 1\n"
        assert hub.requests() == []  # within its lifetime: no request
        monkeypatch.setattr(fetch, "URL_CACHE_SECONDS", 0)
        assert fetch.fetch_url(url, job, False, reporter).read_bytes() == b"two: 2\n"
        assert fetch.fetch_url(url, job, True, reporter) == first  # offline: the cache
