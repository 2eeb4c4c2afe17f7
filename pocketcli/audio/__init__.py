"""Audio in and out: WAV writing, and reading recordings for voice cloning (read.py)."""
