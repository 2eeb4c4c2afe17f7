"""The KevinAHM v2 bundle runtime's registration.

A folder holding ``bundle.json`` given as ``--model-dir`` (with ``--runtime``
auto or onnx) is taken by this spec: the registry asks each spec whether it
claims a folder before it falls back to the named runtime.
"""

from __future__ import annotations

from pathlib import Path

from pocketcli.errors import FieldError, OptionConflict, UserError
from pocketcli.runtimes.onnx_spec import OnnxSpec
from pocketcli.runtimes.registry import LoadedModel, ModelRequest


def _bundle(directory: Path):
    from pocketcli.runtimes.kevinahm import Bundle

    return Bundle.read(directory)


class KevinAhmSpec(OnnxSpec):
    name = "kevinahm"
    description = "ONNX Runtime on a KevinAHM v2 bundle folder (bundle.json) as the model folder"
    precisions = ("fp32", "int8")
    default_precision = "fp32"
    custom_configs = False
    builds_packs = False
    auto_rank = 0
    claims_for = ("onnx",)

    def claims_folder(self, directory: Path) -> bool:
        return (Path(directory) / "bundle.json").is_file()

    def languages(self) -> tuple[str, ...]:
        return ()

    def check(self, req: ModelRequest) -> ModelRequest:
        if req.model_dir is None:
            raise OptionConflict(
                "the kevinahm runtime runs a bundle folder: give {model_dir}", "model_dir"
            )
        req = super(OnnxSpec, self).check(req)
        bundle = _bundle(req.model_dir)
        if req.precision not in bundle.precisions:
            have = ", ".join(bundle.precisions) or "none"
            raise UserError(
                f"bundle {req.model_dir} has no {req.precision} graphs (it has: {have})"
            )
        return req

    def check_voice(self, req: ModelRequest, name: str) -> None:
        from pocketcli.store.catalog import check_voice

        assert req.model_dir is not None
        language = self.pack_language(req.model_dir)
        if language is None:  # a name the user gave: a usage error, as on every pack
            raise FieldError(
                f"voice {name!r}: bundle {req.model_dir} is for a model pockettts has no"
                " built-in voices for; use {voice_file} or {clone_voice}",
                "voice",
                "voice_file",
                "clone_voice",
            )
        check_voice(name, language)

    def find_pack(self, req: ModelRequest) -> Path:
        assert req.model_dir is not None
        return req.model_dir

    def load(self, pack_dir: Path, req: ModelRequest) -> LoadedModel:
        from pocketcli.runtimes.kevinahm import KevinAhmRuntime

        runtime = KevinAhmRuntime(pack_dir, precision=str(req.precision), threads=req.threads)
        kind = runtime.bundle.tokenizer_kind
        return LoadedModel(
            runtime, runtime.tokenizer_path, kind, self.pack_language(pack_dir), Path(pack_dir)
        )

    def pack_language(self, pack_dir: Path) -> str | None:
        from pocketcli.store.catalog import known_languages

        bundle = _bundle(pack_dir)
        source = bundle.sidecar.get("source")
        recorded = source.get("language") if isinstance(source, dict) else None
        language = recorded if isinstance(recorded, str) else bundle.language
        return language if language in known_languages("onnx") else None

    def fetch_voices(self, req: ModelRequest, names: tuple[str | None, ...]) -> None:
        assert req.model_dir is not None
        language = self.pack_language(req.model_dir)
        if language is not None:
            from dataclasses import replace

            super().fetch_voices(replace(req, language=language), names)


SPEC = KevinAhmSpec()
