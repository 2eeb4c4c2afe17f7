"""pockettts: Kyutai Pocket TTS on ONNX Runtime and CoreML."""

__version__ = "0.1.0"
