"""The benchmark harness: FluidAudio's TTS figures on the MiniMax test set."""

# Round-trip recognisers ``--asr-backend`` takes (bench/asr.py loads them).
ASR_BACKENDS = ("auto", "pocketsphinx", "faster-whisper", "none")
