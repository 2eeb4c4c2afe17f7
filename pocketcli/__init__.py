"""pockettts: Kyutai Pocket TTS on ONNX Runtime and CoreML."""

__version__ = "0.1.0"

from pocketcli.api import PocketTTS  # noqa: E402

__all__ = ["PocketTTS", "__version__"]
