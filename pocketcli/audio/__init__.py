"""Audio in and out: WAV writing and (later) reading prompts."""
