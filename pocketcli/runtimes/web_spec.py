"""The browser pack runtime's registration.

A folder in the browser pack layout (``pocket_tts.json`` and ``onnx/*.onnx``, see
``packs.web``) given as ``--model-dir`` (with ``--runtime`` auto or onnx) is
taken by this spec. Its one built-in voice is the pack's ``voice_alba.bin``.
"""

from __future__ import annotations

from pathlib import Path

from pocketcli.errors import FieldError, OptionConflict, UserError
from pocketcli.runtimes.onnx_spec import OnnxSpec
from pocketcli.runtimes.registry import LoadedModel, ModelRequest

PACK_VOICE = "alba"


class WebSpec(OnnxSpec):
    name = "browser"
    description = "ONNX Runtime on a browser pack folder (pocket_tts.json) as the model folder"
    precisions = ("int4",)
    default_precision = "int4"
    custom_configs = False
    builds_packs = False
    auto_rank = 0
    claims_for = ("onnx",)

    def claims_folder(self, directory: Path) -> bool:
        from pocketcli.packs.web_layout import is_web_pack

        return is_web_pack(directory)

    def languages(self) -> tuple[str, ...]:
        return ()

    def check(self, req: ModelRequest) -> ModelRequest:
        if req.model_dir is None:
            raise FieldError(
                "the browser runtime runs a browser pack folder: give {model_dir}", "model_dir"
            )
        from pocketcli.runtimes.web import read_pack_config

        read_pack_config(req.model_dir)
        return super(OnnxSpec, self).check(req)

    def check_voice(self, req: ModelRequest, name: str) -> None:
        if name.lower() != PACK_VOICE:
            raise OptionConflict(
                f"voice {name!r}: browser pack {req.model_dir} has one built-in voice,"
                f" {PACK_VOICE!r}; use {{voice_file}} for others",
                "voice",
                "voice_file",
            )

    def find_pack(self, req: ModelRequest) -> Path:
        assert req.model_dir is not None
        return req.model_dir

    def load(self, pack_dir: Path, req: ModelRequest) -> LoadedModel:
        from pocketcli.runtimes.web import WebRuntime

        runtime = WebRuntime(pack_dir, threads=req.threads)
        return LoadedModel(
            runtime, runtime.tokenizer_path, runtime.tokenizer_kind, None, Path(pack_dir)
        )

    def pack_language(self, pack_dir: Path) -> str | None:
        return None

    def pack_voices(self, pack_dir: Path) -> tuple[str, ...]:
        return (PACK_VOICE,)

    def default_voice(self, model: LoadedModel, req: ModelRequest) -> str | None:
        return PACK_VOICE

    def voice_file(self, model: LoadedModel, req: ModelRequest, name: str) -> Path:
        """The pack's voice as a voice state file (prefilled once per pack file, kept in
        the temporary folder): ``voice_alba.bin`` holds up to 127 rows, more than a
        FluidAudio ``.bin`` voice may, and already starts with ``bos_before_voice``."""
        import hashlib
        import tempfile

        from pocketcli.packs.web_layout import VOICE_FILE
        from pocketcli.voices.cloning import voice_from_conditioning
        from pocketcli.voices.state import save_voice_state

        self.check_voice(req, name)
        source = model.pack_dir / VOICE_FILE
        try:
            st = source.stat()
        except OSError as exc:
            raise UserError(f"cannot read {source}: {exc.strerror or exc}") from None
        key = f"{source.resolve()}|{st.st_size}|{st.st_mtime_ns}".encode()
        out = Path(tempfile.gettempdir()) / "pockettts-browser-voices"
        path = out / f"{hashlib.sha256(key).hexdigest()[:24]}.safetensors"
        if not path.is_file():
            runtime = model.runtime
            state = voice_from_conditioning(runtime, runtime.pack_voice())  # type: ignore[attr-defined]
            out.mkdir(parents=True, exist_ok=True)
            save_voice_state(state, path)
        return path

    def fetch_voices(self, req: ModelRequest, names: tuple[str | None, ...]) -> None:
        return None


SPEC = WebSpec()
