"""pockettts: Kyutai Pocket TTS on ONNX Runtime and CoreML.

``PocketTTS`` (and the other names below) are imported on first use, so
``import pocketcli.text`` (or the CLI's ``--help``) does not load runtimes,
the normaliser or ONNX Runtime.
"""

from __future__ import annotations

from pocketcli import lazy

__version__ = "0.1.0"
_EXPORTS = {
    "PocketTTS": "pocketcli.api",
    "SpeakOptions": "pocketcli.options",
    "ModelRequest": "pocketcli.options",
    "RuntimeSpec": "pocketcli.runtimes.registry",
}
__all__ = [*_EXPORTS, "__version__"]
__getattr__ = lazy.exports(__name__, _EXPORTS, relative=False)[0]
