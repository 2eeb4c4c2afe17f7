"""FluidAudio's CoreML packs, fetched the way FluidAudio's ``ensureModels`` does.

The pack of a language is the ``v2.1/<lang>/`` folder of
``FluidInference/pocket-tts-coreml``; a run needs only the models of its
placement and precision plus ``constants_bin/`` (constants, tokenizer and
every voice), never the ``.mlpackage`` sources, ``constants/`` or
``verify.wav``. FluidAudio also deletes the FlowLM of the other precision
after each fetch, so switching precision swaps the file instead of keeping
both; we do the same, and free its blobs in the hub cache too.

The pack lives in the hub cache (``models--FluidInference--pocket-tts-coreml/
snapshots/<commit>/v2.1/<lang>``): the folder returned has FluidAudio's
layout, so a runtime can treat it like FluidAudio's own cache folder.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from huggingface_hub import snapshot_download
from huggingface_hub.errors import LocalEntryNotFoundError

from pocketcli.store.catalog import (
    CoreMLCatalog,
    catalog,
    check_language,
    check_placement,
    check_precision,
)
from pocketcli.store.errors import StoreError, explain, offline_error
from pocketcli.store.fetch import verify_blob
from pocketcli.store.hubclient import install_deadline, no_network
from pocketcli.store.paths import env_offline, hub_cache_dir, hub_endpoint
from pocketcli.store.progress import Reporter


def _patterns(
    cat: CoreMLCatalog, language: str, precision: str, placement: str
) -> tuple[list[str], list[str], tuple[str, ...]]:
    sub = cat.language_dir(language)
    required = (*cat.models(precision, placement), *cat.required_dirs)
    allow = [f"{sub}/{name}/*" for name in required]
    allow += [f"{sub}/{name}" for name in cat.optional_files]
    return allow, list(cat.never), required


def _missing(lang_dir: Path, required: tuple[str, ...]) -> list[str]:
    """Required folders that are absent or empty (FluidAudio checks existence only)."""
    return [
        name
        for name in required
        if not (lang_dir / name).is_dir() or not any((lang_dir / name).iterdir())
    ]


def _snapshot(
    cat: CoreMLCatalog, allow: list[str], ignore: list[str], local: bool, reporter: Reporter
) -> Path:
    kwargs = {
        "repo_id": cat.repo,
        "revision": cat.revision,
        "cache_dir": str(hub_cache_dir()),
        "endpoint": hub_endpoint(),
        "allow_patterns": allow,
        "ignore_patterns": ignore,
    }
    if local:
        with no_network():
            return Path(snapshot_download(**kwargs, local_files_only=True))
    return Path(snapshot_download(**kwargs, tqdm_class=reporter.tqdm_class()))


def storage_folder(repo: str) -> Path:
    return hub_cache_dir() / f"models--{repo.replace('/', '--')}"


def _delete_unused_flowlm(cat: CoreMLCatalog, lang_dir: Path, precision: str) -> None:
    """Removes the other precision's FlowLM, and its blobs when nothing else links to them."""
    blobs: set[str] = set()
    for name in cat.unused_flowlm(precision):
        folder = lang_dir / name
        if not folder.exists():
            continue
        for item in folder.rglob("*"):
            if item.is_symlink():
                blobs.add(os.path.realpath(item))
        shutil.rmtree(folder, ignore_errors=True)
    if not blobs:
        return
    still_used = {
        os.path.realpath(link)
        for link in (storage_folder(cat.repo) / "snapshots").rglob("*")
        if link.is_symlink()
    }
    for blob in blobs - still_used:
        Path(blob).unlink(missing_ok=True)


def _verify(lang_dir: Path, language: str) -> None:
    for item in sorted(lang_dir.rglob("*")):
        if item.is_file():
            verify_blob(item, f"{item.relative_to(lang_dir)} of the CoreML {language} pack")


def resolve_coreml_pack(
    language: str,
    precision: str = "fp16",
    placement: str = "gpu",
    offline: bool = False,
    progress: bool = False,
) -> Path:
    """The ``v2.1/<language>`` folder of FluidAudio's CoreML pack, with what this run needs.

    Fetches only the models of ``placement`` and ``precision`` (fp16: flowlm_step,
    int8: flowlm_stepv2) plus ``constants_bin/``, and deletes the other FlowLM.
    """
    cat = catalog().coreml
    check_language("coreml", language)
    check_precision("coreml", precision)
    check_placement(placement)
    offline = offline or env_offline()
    install_deadline()
    allow, ignore, required = _patterns(cat, language, precision, placement)
    sub = cat.language_dir(language)
    what = f"the CoreML {language} pack ({precision}, {placement})"
    hint = f"pockettts download --runtime coreml --language {language} --precision {precision}"
    with Reporter(progress) as reporter:
        lang_dir: Path | None = None
        try:
            lang_dir = _snapshot(cat, allow, ignore, True, reporter) / sub
        except (LocalEntryNotFoundError, OSError, ValueError):
            lang_dir = None
        if lang_dir is None or _missing(lang_dir, required):
            if offline:
                raise offline_error(what, hint)
            reporter.progress_line(f"downloading {what} ({cat.repo}/{sub})")
            try:
                lang_dir = _snapshot(cat, allow, ignore, False, reporter) / sub
            except Exception as exc:
                mapped = explain(
                    exc,
                    what=what,
                    repo=cat.repo,
                    hint=hint,
                    not_found=f"{cat.repo} has no {sub} folder",
                )
                if mapped is None:
                    raise
                raise mapped from exc
        _delete_unused_flowlm(cat, lang_dir, precision)
        missing = _missing(lang_dir, required)
        if missing:
            raise StoreError(
                f"{cat.repo} {sub} lacks {', '.join(missing)}, which the "
                f"{placement} placement needs: try the gpu placement"
            )
        _verify(lang_dir, language)
    return lang_dir


# FluidAudio's cloning encoders: the pack's own (non-English packs), else the
# repository root's English-codec encoder with the 24-layer reprojection matrix.
_ENCODER_PATTERNS = (
    "{sub}/mimi_encoderv3.mlmodelc/*",
    "mimi_encoderv2.mlmodelc/*",
    "encoder_recover_pinv.bin",
)


def resolve_coreml_encoder(language: str, offline: bool = False, progress: bool = False) -> Path:
    """Fetches what cloning with a CoreML pack needs (FluidAudio's encoders), and
    returns the pack folder; the runtime picks the encoder that is there."""
    cat = catalog().coreml
    check_language("coreml", language)
    offline = offline or env_offline()
    install_deadline()
    sub = cat.language_dir(language)
    allow = [p.format(sub=sub) for p in _ENCODER_PATTERNS]
    what = f"the CoreML voice encoder for {language}"
    hint = f"pockettts download --runtime coreml --language {language}"
    with Reporter(progress) as reporter:
        try:
            root = _snapshot(cat, allow, list(cat.never), True, reporter)
        except (LocalEntryNotFoundError, OSError, ValueError):
            root = None
        have = root is not None and any(
            (root / name).is_dir()
            for name in (f"{sub}/mimi_encoderv3.mlmodelc", "mimi_encoderv2.mlmodelc")
        )
        if not have:
            if offline:
                raise offline_error(what, hint)
            try:
                root = _snapshot(cat, allow, list(cat.never), False, reporter)
            except Exception as exc:
                mapped = explain(exc, what=what, repo=cat.repo, hint=hint)
                if mapped is None:
                    raise
                raise mapped from exc
    return root / sub


def cached_coreml_dir(language: str) -> Path | None:
    """The cached ``v2.1/<language>`` folder (any precision), without any request."""
    cat = catalog().coreml
    ref = storage_folder(cat.repo) / "refs" / cat.revision
    try:
        commit = ref.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    folder = storage_folder(cat.repo) / "snapshots" / commit / cat.language_dir(language)
    return folder if folder.is_dir() else None
