"""Built-in voices: Kyutai's voice states, fetched per language on first use.

A built-in voice is a KV-cache state computed with the released weights of
one language model, so the same name is a different file per language
(``languages/<language>/embeddings/<voice>.safetensors`` at the revision
pocket-tts 4.0.1 pins). CoreML packs carry their own copies in
``constants_bin/``, fetched with the pack.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pocketcli.store.catalog import (
    catalog,
    check_language,
    check_voice,
    default_voice_for,
    known_voices,
    native_voice,
)
from pocketcli.store.coreml import cached_coreml_dir
from pocketcli.store.fetch import Fetch, HfRef, cached_hf_file, fetch_hf_file
from pocketcli.store.hubclient import install_deadline
from pocketcli.store.paths import env_offline
from pocketcli.store.progress import Reporter


def voice_ref(language: str, voice: str) -> HfRef:
    return HfRef.parse(catalog().voice_state.format(language=language, voice=voice))


def resolve_voice(language: str, name: str, offline: bool = False, progress: bool = False) -> Path:
    """The Kyutai voice state (.safetensors) of a built-in voice for a language's model.

    ``name`` may be FluidAudio's ``af_heart`` (the default voice). Unknown names and
    languages raise UnknownNameError listing the valid ones.
    """
    check_language("onnx", language)
    voice = check_voice(name, language)
    offline = offline or env_offline()
    install_deadline()
    job = Fetch(
        what=f"voice {voice} for {language}",
        hint=f"pockettts download --runtime onnx --language {language} --voice {voice}",
        not_found=(
            f"voice {voice!r} is not published for {language}; its voices: "
            f"{', '.join(known_voices(language))}"
        ),
    )
    with Reporter(progress) as reporter:
        return fetch_hf_file(voice_ref(language, voice), job, offline, reporter)


@dataclass(frozen=True)
class VoiceStatus:
    name: str
    origin: str
    default: bool
    native: bool
    onnx: bool
    coreml: bool | None  # None: no CoreML pack for this language

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "origin": self.origin,
            "default": self.default,
            "native": self.native,
            "downloaded": {"onnx": self.onnx, "coreml": self.coreml},
        }


def voice_statuses(language: str) -> list[VoiceStatus]:
    """Every built-in voice of a language, and where it is already downloaded (no network)."""
    cat = catalog()
    check_language("onnx", language)
    coreml_dir = cached_coreml_dir(language) if language in cat.coreml.languages else None
    statuses = []
    for name in known_voices(language):
        on_coreml: bool | None = None
        if language in cat.coreml.languages:
            on_coreml = (
                coreml_dir is not None
                and (coreml_dir / "constants_bin" / f"{name}.safetensors").is_file()
            )
        statuses.append(
            VoiceStatus(
                name=name,
                origin=cat.voices[name].origin,
                default=name == default_voice_for(language),
                native=name == native_voice(language),
                onnx=cached_hf_file(voice_ref(language, name)) is not None,
                coreml=on_coreml,
            )
        )
    return statuses
