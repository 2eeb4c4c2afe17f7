"""pockettts: Kyutai Pocket TTS on ONNX Runtime and CoreML.

``PocketTTS`` is imported on first use, so ``import pocketcli.text`` (or the
CLI's ``--help``) does not load runtimes, the normaliser or ONNX Runtime.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not imported from typing: the console script starts faster
if TYPE_CHECKING:
    from typing import Any

__version__ = "0.1.0"
__all__ = ["PocketTTS", "__version__"]


def __getattr__(name: str) -> Any:
    if name == "PocketTTS":
        from pocketcli.api import PocketTTS

        return PocketTTS
    raise AttributeError(f"module 'pocketcli' has no attribute {name!r}")
