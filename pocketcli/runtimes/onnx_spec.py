"""The ONNX runtime's registration: Kyutai's models as packs built here, on every OS."""

from __future__ import annotations

from pathlib import Path

from pocketcli.errors import FieldError, OptionConflict
from pocketcli.options import ModelRequest
from pocketcli.packs.manifest import PRECISIONS
from pocketcli.runtimes.registry import LoadedModel, RuntimeSpec

RECORDED_LANGUAGE = "language"  # the manifest's source field naming the pack's language


class OnnxSpec(RuntimeSpec):
    name = "onnx"
    description = "ONNX Runtime on any OS: Kyutai's weights, built into a pack on first use"
    precisions = PRECISIONS
    default_precision = PRECISIONS[0]
    local_packs = True
    custom_configs = True
    builds_packs = True
    auto_rank = 1

    def languages(self) -> tuple[str, ...]:
        from pocketcli.store.catalog import known_languages

        return known_languages("onnx")

    def check(self, req: ModelRequest) -> ModelRequest:
        req = super().check(req)
        if req.model_dir is not None:
            _pack_manifest(req.model_dir)  # a missing or broken pack: now, not after downloads
        return req

    def check_voice(self, req: ModelRequest, name: str) -> None:
        from pocketcli.store.catalog import canonical_voice, check_voice

        if req.config is not None:
            raise _no_builtin_voices_for_config()
        if req.model_dir is None:
            check_voice(name, req.model_language)
            return
        if canonical_voice(name) in self.pack_voices(req.model_dir):
            return
        language = pack_language(req.model_dir)
        if language is None:
            raise _not_in_pack(name, req.model_dir)
        check_voice(name, language)

    def find_pack(self, req: ModelRequest) -> Path:
        if req.model_dir is not None:
            return req.model_dir
        from pocketcli.store.onnx import resolve_onnx_pack

        language = None if req.config is not None else req.model_language
        return resolve_onnx_pack(
            language,
            req.config,
            str(req.precision),
            req.offline,
            progress=req.progress,
            rebuild=req.rebuild,
        )

    def load(self, pack_dir: Path, req: ModelRequest) -> LoadedModel:
        from pocketcli.runtimes.onnx import OnnxRuntime

        runtime = OnnxRuntime(pack_dir, precision=str(req.precision), threads=req.threads)
        language = runtime.manifest.source.get(RECORDED_LANGUAGE) or None
        return LoadedModel(
            runtime,
            runtime.tokenizer_path,
            runtime.manifest.tokenizer_kind,
            str(language) if language else None,
            Path(pack_dir),
        )

    def pack_language(self, pack_dir: Path) -> str | None:
        return pack_language(pack_dir)

    def fetch_voices(self, req: ModelRequest, names: tuple[str | None, ...]) -> None:
        from pocketcli.store.catalog import canonical_voice, catalog, known_voices, native_voice
        from pocketcli.store.voices import resolve_voice

        language = req.model_language
        wanted: list[str] = []
        for name in names:
            if name is None:
                wanted += [catalog().default_voice, native_voice(language) or ""]
            else:
                wanted.append(canonical_voice(name))
        for voice in dict.fromkeys(w for w in wanted if w):
            if voice in known_voices(language):
                resolve_voice(language, voice, req.offline, progress=req.progress)

    def default_voice(self, model: LoadedModel, req: ModelRequest) -> str | None:
        from pocketcli.store.catalog import catalog

        if model.language is None:  # custom weights or a bare pack: its own alba, else none
            default = catalog().default_voice
            return default if default in self.pack_voices(model.pack_dir) else None
        return super().default_voice(model, req)

    def voice_file(self, model: LoadedModel, req: ModelRequest, name: str) -> Path:
        from pocketcli.store.catalog import check_voice
        from pocketcli.store.voices import resolve_voice

        if req.model_dir is not None:
            for folder in ("voices", "constants_bin"):
                local = model.pack_dir / folder / f"{name}.safetensors"
                if local.is_file():
                    return local
        if model.language is None:
            if req.config is not None:
                raise _no_builtin_voices_for_config()
            raise _not_in_pack(name, model.pack_dir)
        voice = check_voice(name, model.language)
        return resolve_voice(model.language, voice, req.offline, progress=False)


def _pack_manifest(pack_dir: Path):
    from pocketcli.packs.manifest import PackManifest

    return PackManifest.read(pack_dir)


def _not_in_pack(name: str, pack_dir: Path) -> FieldError:
    # A name the user gave: a usage error (exit 2), as an unknown voice is on every pack.
    return FieldError(
        f"voice {name!r} is not in {pack_dir / 'voices'} and the pack does not say its"
        " language; use {voice_file} or {clone_voice}",
        "voice",
        "voice_file",
        "clone_voice",
    )


def _no_builtin_voices_for_config() -> OptionConflict:
    return OptionConflict(
        "built-in voices were computed with the released weights; with {config} "
        "use {voice_file} or {clone_voice}",
        "voice",
        "config",
        "voice_file",
        "clone_voice",
    )


def pack_language(pack_dir: Path) -> str | None:
    """The language a built pack records (None for a custom config's pack)."""
    language = _pack_manifest(pack_dir).source.get(RECORDED_LANGUAGE)
    return str(language) if language else None


SPEC = OnnxSpec()
