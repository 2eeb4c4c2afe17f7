"""The CoreML runtime's registration: FluidAudio's published packs, on macOS."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pocketcli.errors import FieldError
from pocketcli.options import ModelRequest
from pocketcli.runtimes.coreml import units
from pocketcli.runtimes.registry import LoadedModel, RuntimeSpec

if TYPE_CHECKING:
    from pocketcli.config import ModelConfig
    from pocketcli.runtimes.coreml.predictor import PredictorFactory


class CoreMLSpec(RuntimeSpec):
    name = "coreml"
    description = "Core ML on macOS: FluidAudio's v2.1 packs"
    precisions = units.PRECISIONS
    default_precision = units.DEFAULT_PRECISION
    placements = units.PLACEMENTS
    default_placement = units.DEFAULT_PLACEMENT
    compute_units = tuple(units.PRESETS)
    compute_unit_aliases = units.PRESET_ALIASES
    default_compute_units = units.DEFAULT_PRESET
    local_packs = True  # a v2.1/<language> folder
    custom_configs = False
    auto_rank = 2  # preferred where it runs

    def unavailable_reason(self) -> str | None:
        from pocketcli.runtimes.coreml.predictor import coreml_unavailable_reason

        return coreml_unavailable_reason()

    def languages(self) -> tuple[str, ...]:
        from pocketcli.store.catalog import known_languages

        return known_languages("coreml")

    def language_hint(self, language: str) -> str:
        from pocketcli.store.catalog import known_languages

        if language in known_languages("onnx"):
            return "(FluidAudio has no CoreML pack for it; the onnx runtime has)"
        return ""

    def check_voice(self, req: ModelRequest, name: str) -> None:
        from pocketcli.store.catalog import canonical_voice, check_voice

        if req.model_dir is not None and canonical_voice(name) in self.pack_voices(req.model_dir):
            return
        check_voice(name, req.model_language)

    def find_pack(self, req: ModelRequest) -> Path:
        if req.model_dir is not None:
            return req.model_dir
        from pocketcli.store.coreml import resolve_coreml_pack

        return resolve_coreml_pack(
            req.model_language,
            str(req.precision),
            str(req.placement),
            req.offline,
            progress=req.progress,
        )

    def load(
        self,
        pack_dir: Path,
        req: ModelRequest,
        *,
        predictor_factory: PredictorFactory | None = None,
        config: ModelConfig | None = None,
    ) -> LoadedModel:
        """``predictor_factory`` and ``config`` replace Core ML's predictors and the
        bundled config (``pocketcli.api.open_request``: twins of the models on any OS)."""
        from pocketcli.runtimes.coreml import CoreMLRuntime

        runtime = CoreMLRuntime(
            pack_dir,
            str(req.precision),
            str(req.placement),
            str(req.compute_units),
            predictor_factory,
            config=config,
        )
        return LoadedModel(
            runtime, runtime.tokenizer_path, runtime.tokenizer_kind, runtime.language, pack_dir
        )

    def voice_file(self, model: LoadedModel, req: ModelRequest, name: str) -> Path:
        path = model.pack_dir / "constants_bin" / f"{name}.safetensors"
        if not path.is_file():
            raise FieldError(f"voice {name!r} is not in the CoreML pack ({path.parent})", "voice")
        return path

    def prepare_cloning(self, model: LoadedModel, req: ModelRequest) -> None:
        if req.model_dir is not None:
            return  # a local pack brings its own encoder, or cloning says it lacks one
        from pocketcli.store.coreml import resolve_coreml_encoder

        resolve_coreml_encoder(req.model_language, req.offline)


SPEC = CoreMLSpec()
