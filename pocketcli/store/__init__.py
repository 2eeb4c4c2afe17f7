"""The model store: which models and voices exist, and fetching them safely.

Public API (what ``pockettts tts``, ``download`` and ``voices`` call):

- ``resolve_onnx_pack(language, config, precision, offline, progress)``
- ``resolve_voice(language, name, offline)``
- ``resolve_coreml_pack(language, precision, placement, offline)``
- ``known_languages(runtime)``, ``known_voices(language=None)`` and the
  ``check_*`` helpers, which raise ``UnknownNameError`` listing valid values.

See ``paths`` for the cache locations and environment variables.
"""

from __future__ import annotations

from pocketcli import lazy

# Names -> submodule. Loaded on first use: the catalog is cheap, but the
# download code pulls in huggingface_hub and httpx2, and the pack builder
# onnx, which `pockettts --help` should not pay for.
_EXPORTS = {
    "RUNTIMES": "catalog",
    "UnknownNameError": "catalog",
    "canonical_voice": "catalog",
    "check_language": "catalog",
    "check_placement": "catalog",
    "check_precision": "catalog",
    "check_voice": "catalog",
    "default_precision": "catalog",
    "known_languages": "catalog",
    "known_placements": "catalog",
    "known_precisions": "catalog",
    "known_voices": "catalog",
    "native_voice": "catalog",
    "resolve_coreml_encoder": "coreml",
    "resolve_coreml_pack": "coreml",
    "AccessRefused": "errors",
    "StoreError": "errors",
    "resolve_onnx_pack": "onnx",
    "resolve_voice": "voices",
    "voice_statuses": "voices",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy.exports(__name__, _EXPORTS)
