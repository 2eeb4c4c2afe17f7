"""Speech into an audio file with its timed words: what ``tts --words`` and a batch line
with words do (``PocketTTS.synthesize_to_file``, keeping each frame's words)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pocketcli.words.align import Word


def speak_to_file(
    tts: Any,
    text: str,
    path: Path,
    voice: Any,
    options: Any,
    fmt: Any,
    *,
    on_warning: Callable[[str], None] | None = None,
    on_chunk: Callable[[Any], None] | None = None,
    on_words: Callable[[tuple[Word, ...]], None] | None = None,
) -> tuple[float, list[Word]]:
    """``synthesize_to_file`` (the same bytes) with ``options.words``: the audio's seconds
    and its words; ``on_words`` is given each frame's words as they are decided."""
    from pocketcli.audio.output import open_audio_writer

    timed: list[Word] = []
    rate = tts.sample_rate
    with open_audio_writer(path, fmt, rate, peak_normalize=options.peak_normalized) as out:
        frames = tts.stream(text, voice, options, on_warning=on_warning, on_chunk=on_chunk)
        for frame in frames:
            out.write(frame.audio, speech=not frame.is_pause)
            timed.extend(frame.words)
            if on_words is not None and frame.words:
                on_words(frame.words)
    return out.samples / rate, timed
