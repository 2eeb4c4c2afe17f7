"""ONNX packs on demand: Kyutai's checkpoint and tokenizer in, a built pack out.

A pack is built once per model (a catalog language or a custom config) into
``<store>/packs/onnx/<key>`` and reused while its manifest still names the
same config, weights and tokenizer; asking for a precision the pack lacks
rebuilds it with both, from the cached checkpoint.

Weights: pocket-tts configs name two checkpoints, the gated
``kyutai/pocket-tts`` one (with the Mimi encoder that voice cloning needs)
and an ungated one without it. Like pocket-tts, we take the gated one and
fall back to the ungated one when the Hub refuses access, saying that
cloning is then unavailable; the manifest's ``source.voice_cloning_weights``
records which one a pack was built from.
"""

from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pocketcli.config import ConfigError, ModelConfig
from pocketcli.errors import TokenizerError, UserError
from pocketcli.packs.manifest import PRECISIONS, PackError, PackManifest
from pocketcli.store.catalog import catalog, check_precision, kyutai_language
from pocketcli.store.errors import AccessRefused, StoreError, offline_error
from pocketcli.store.fetch import (
    Fetch,
    HfRef,
    cached_source,
    fetch_source,
    is_remote,
    resolve_remote_name,
)
from pocketcli.store.hubclient import install_deadline
from pocketcli.store.paths import env_offline, store_dir
from pocketcli.store.progress import Reporter

# A Kyutai config is a few KB; anything past this is not one (and is not read).
CONFIG_MAX_BYTES = 1 << 20


@dataclass(frozen=True)
class ModelSource:
    """What a pack is built from."""

    key: str
    label: str  # the language, or the config as given
    name: str  # short, for messages: the language or the config's file name
    language: str | None
    config: ModelConfig
    config_sha256: str
    base_dir: Path | None
    weights: tuple[tuple[str, bool], ...]  # (source, has voice cloning), preferred first
    tokenizer: str

    @property
    def hint(self) -> str:
        if self.language is not None:
            return f"pockettts download --runtime onnx --language {self.language}"
        return f"pockettts download --runtime onnx --config {self.label}"


def _weights(config: ModelConfig) -> tuple[tuple[str, bool], ...]:
    options = [(config.weights_path, True), (config.weights_path_without_voice_cloning, False)]
    return tuple((url, cloning) for url, cloning in options if url)


def _source(
    language: str | None, config: str | None, offline: bool, reporter: Reporter
) -> ModelSource:
    if language is not None and config is not None:
        raise UserError("give a language or a config, not both")
    if config is None:
        entry = kyutai_language(language or catalog().default_language)
        language = entry.name
        path, label, base_dir, key = entry.config_path(), entry.name, None, entry.name
    else:
        job = Fetch(
            what=f"config {config}",
            hint=f"pockettts download --runtime onnx --config {config}",
            max_bytes=CONFIG_MAX_BYTES,
        )
        path = fetch_source(config, job, offline, reporter)
        label = config
        base_dir = None if "://" in config else path.resolve().parent
        key = ""
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    model_config = ModelConfig.from_yaml(path)
    source = ModelSource(
        key=key or f"config-{digest[:16]}",
        label=label,
        name=label if config is None else Path(config.split("@")[0]).name or config,
        language=language if config is None else None,
        config=model_config,
        config_sha256=digest,
        base_dir=base_dir,
        weights=_weights(model_config),
        tokenizer=model_config.flow_lm.lookup_table.tokenizer_path,
    )
    if config is not None and is_remote(config):
        # A config from the network never names a file on this machine.
        source = replace(
            source,
            weights=tuple((resolve_remote_name(u, config), c) for u, c in source.weights),
            tokenizer=resolve_remote_name(source.tokenizer, config),
        )
    if base_dir is not None:
        _inside_config_folder(source, base_dir)
    if not source.weights:
        raise StoreError(
            f"config {label} names no weights_path: pockettts builds packs from "
            "one model.safetensors checkpoint"
        )
    return source


def _inside_config_folder(src: ModelSource, base_dir: Path) -> None:
    """A local config's relative file names stay in its folder (``../../etc/passwd`` is
    refused); an absolute path is the user's own choice and is taken as written."""
    named = [("flow_lm.lookup_table.tokenizer_path", src.tokenizer)]
    named += [("weights_path", url) for url, _ in src.weights]
    for field, name in named:
        if "://" in name or Path(name).expanduser().is_absolute():
            continue
        inside = (base_dir / name).resolve().is_relative_to(base_dir.resolve())
        if ".." in Path(name).parts or not inside:
            raise ConfigError(
                f"config {src.label}: {field} {name!r} points outside the config's folder"
            )


def _checked_tokenizer(src: ModelSource, path: Path) -> Path:
    """The tokenizer a config names must read as one (and fit the model's table) before
    it is built into anything or copied into an export."""
    from pocketcli.text.tokenizer import load_tokenizer

    table = src.config.flow_lm.lookup_table
    try:
        load_tokenizer(path, table.tokenizer, vocab_size=table.n_bins)
    except TokenizerError as exc:
        raise ConfigError(f"config {src.label}: {exc}") from None
    return path


def _reusable(pack_dir: Path, src: ModelSource) -> PackManifest | None:
    """The pack's manifest if the pack was built from this same source, else None."""
    try:
        manifest = PackManifest.read(pack_dir)
    except PackError:
        return None
    s = manifest.source
    same = (
        s.get("config_sha256") == src.config_sha256
        and s.get("weights") in {url for url, _ in src.weights}
        and s.get("tokenizer") == src.tokenizer
    )
    return manifest if same else None


def _fetch_weights(
    src: ModelSource, offline: bool, retry_gated: bool, reporter: Reporter
) -> tuple[Path, str, bool]:
    """The checkpoint: a cached one if any, else the preferred one the Hub grants."""
    what = f"the {src.name} checkpoint"
    cached = [
        (url, cloning, cached_source(url, what, src.base_dir)) for url, cloning in src.weights
    ]
    for url, cloning, path in cached:
        if path is not None and (cloning or not retry_gated or offline):
            return path, url, cloning
    if offline:
        raise offline_error(what, src.hint)
    refused: AccessRefused | None = None
    for index, (url, cloning) in enumerate(src.weights):
        gated = url.startswith("hf://") and HfRef.parse(url).repo == catalog().gated_repo
        job = Fetch(what=what, hint=src.hint, gated_terms=catalog().terms_url if gated else None)
        try:
            return fetch_source(url, job, offline, reporter, src.base_dir), url, cloning
        except AccessRefused as exc:
            if index + 1 < len(src.weights):
                refused = refused or exc
                reporter.note(
                    f"{exc}. Using the weights without voice cloning instead: "
                    "built-in voices work, voice cloning is unavailable."
                )
                continue
            if refused is None:
                raise
            # The first refusal says how to get access; the fallback failing adds little.
            raise StoreError(
                f"{refused} (the weights without voice cloning were refused too)"
            ) from exc
    raise AssertionError("unreachable: the loop returns or raises")


def _fetch_files(
    src: ModelSource, offline: bool, retry_gated: bool, reporter: Reporter
) -> tuple[Path, Path, dict[str, Any]]:
    """The checkpoint and tokenizer of ``src`` (fetched if needed) and what they are."""
    checkpoint, weights_url, cloning = _fetch_weights(src, offline, retry_gated, reporter)
    tokenizer = fetch_source(
        src.tokenizer,
        Fetch(what=f"the {src.name} tokenizer", hint=src.hint),
        offline,
        reporter,
        src.base_dir,
    )
    _checked_tokenizer(src, tokenizer)
    source = {
        "kind": "kyutai",
        "language": src.language,
        "config": src.label,
        "config_sha256": src.config_sha256,
        "weights": weights_url,
        "voice_cloning_weights": cloning,
        "tokenizer": src.tokenizer,
    }
    return checkpoint, tokenizer, source


def model_files(
    language: str | None, config: str | None, offline: bool = False, progress: bool = False
) -> tuple[Path, ModelConfig, Path, dict[str, Any]]:
    """The checkpoint, config, tokenizer and source record of a language (or a config
    YAML), fetched into the cache if needed: what exporters to other layouts start from."""
    offline = offline or env_offline()
    install_deadline()
    with Reporter(progress) as reporter:
        src = _source(language, config, offline, reporter)
        checkpoint, tokenizer, source = _fetch_files(src, offline, False, reporter)
    if src.base_dir is not None:  # an export leaves this machine: no local paths in it
        for key in ("config", "weights", "tokenizer"):
            if "://" not in str(source[key]):
                source[key] = Path(str(source[key])).name
    config = _without_local_paths(src.config) if src.base_dir is not None else src.config
    return checkpoint, config, tokenizer, {**source, "name": src.name}


def _without_local_paths(config: ModelConfig) -> ModelConfig:
    """The config with the files it names reduced to their names (what an export records)."""
    raw = copy.deepcopy(config.raw)
    places = [(raw, "weights_path"), (raw, "weights_path_without_voice_cloning")]
    lookup = raw.get("flow_lm", {}).get("lookup_table", {})
    places.append((lookup, "tokenizer_path"))
    for owner, key in places:
        value = owner.get(key)
        if isinstance(value, str) and "://" not in value:
            owner[key] = Path(value).name
    return replace(config, raw=raw)


def resolve_onnx_pack(
    language: str | None,
    config: str | None,
    precision: str = "fp32",
    offline: bool = False,
    progress: bool = False,
    rebuild: bool = False,
) -> Path:
    """The pack directory for a language (or a config YAML), built into the store on first use.

    ``config`` may be a local path, an http(s) URL or ``hf://org/repo/file.yaml@rev``.
    ``offline`` (or HF_HUB_OFFLINE) allows the cache only. ``rebuild`` builds the pack
    again and retries the gated weights even if the ungated ones are cached.
    """
    check_precision("onnx", precision)
    offline = offline or env_offline()
    install_deadline()
    with Reporter(progress) as reporter:
        src = _source(language, config, offline, reporter)
        pack_dir = store_dir() / "packs" / "onnx" / src.key
        manifest = None if rebuild else _reusable(pack_dir, src)
        if manifest is not None and precision in manifest.precisions:
            return pack_dir
        checkpoint, tokenizer, source = _fetch_files(src, offline, rebuild, reporter)
        precisions = {precision, *(manifest.precisions if manifest is not None else ())}
        ordered = tuple(p for p in PRECISIONS if p in precisions)
        from pocketcli.packs.builder import build_pack  # onnx is heavy: only when building

        pack_dir.parent.mkdir(parents=True, exist_ok=True)  # the store's own folders
        build_pack(
            checkpoint,
            src.config,
            tokenizer,
            pack_dir,
            ordered,
            source=source,
            progress=reporter.step,
            force=True,  # the store's own folder: whatever is there is the store's
        )
        reporter.finish_build()
    return pack_dir
