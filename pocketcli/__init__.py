"""pockettts: Kyutai Pocket TTS on ONNX Runtime and CoreML.

``PocketTTS`` (and the other names below) are imported on first use, so
``import pocketcli.text`` (or the CLI's ``--help``) does not load runtimes,
the normaliser or ONNX Runtime.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not imported from typing: the console script starts faster
if TYPE_CHECKING:
    from typing import Any

__version__ = "0.1.0"
_EXPORTS = {
    "PocketTTS": "pocketcli.api",
    "SpeakOptions": "pocketcli.options",
    "ModelRequest": "pocketcli.options",
    "RuntimeSpec": "pocketcli.runtimes.registry",
}
__all__ = [*_EXPORTS, "__version__"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'pocketcli' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
