"""Running a batch file: one WAV per line, a failed line never stops the rest."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from pocketcli.batch import parse_batch
from pocketcli.errors import UserError
from pocketcli.options import SpeakOptions


def run_batch(
    tts,
    voice,
    data: bytes,
    output_dir: Path,
    *,
    overwrite: bool,
    quiet: bool,
    options: SpeakOptions,
    on_warning: Callable[[str], None] | None = None,
) -> int:
    """Speaks every line; returns the number of failed lines."""
    from pocketcli.audio.wav import write_wav

    def say(message: str) -> None:
        if not quiet:
            sys.stderr.write(message + "\n")

    items = parse_batch(data)
    output_dir.mkdir(parents=True, exist_ok=True)
    written = skipped = 0
    failures: list[str] = []
    for item in items:
        if item.error is not None:
            failures.append(f"line {item.line_number}: {item.error}")
            sys.stderr.write(f"pockettts: line {item.line_number}: {item.error}\n")
            continue
        target = output_dir / f"{item.name}.wav"
        if target.exists() and not overwrite:
            skipped += 1
            continue
        try:
            audio = tts.synthesize(item.text, voice, options, on_warning=on_warning)
            write_wav(target, audio, tts.sample_rate)
        except (UserError, ValueError, OSError) as exc:
            reason = getattr(exc, "strerror", None) or str(exc)
            failures.append(f"line {item.line_number}: {reason}")
            sys.stderr.write(f"pockettts: line {item.line_number}: {reason}\n")
            continue
        written += 1
        say(f"{target}")
    summary = f"batch: {written} written, {skipped} already done, {len(failures)} failed"
    if failures:
        sys.stderr.write(summary + "\n")
    else:
        say(summary)
    return len(failures)
