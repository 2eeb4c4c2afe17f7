"""The benchmark harness: FluidAudio's TTS figures on the MiniMax test set."""
