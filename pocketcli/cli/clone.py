"""``pockettts clone``: a recording in, a voice file out."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import typer

from pocketcli.cli import checks, flags
from pocketcli.cli import clickcompat as click
from pocketcli.cli.model_options import MODEL, ModelFlags, load_model, takes_model_flags

HELP = """Clone the voice of a recording into a voice file.

The format follows the extension of -o: .safetensors (Kyutai's voice state,
also read by pocket-tts) or .bin (FluidAudio's conditioning, at most 10 s).

AUDIO is WAV, FLAC, OGG/Vorbis, Opus or MP3 at any sample rate and channel
count (M4A/AAC with: pip install 'pockettts[m4a]'). At most its first 30 s are
used and trailing silence is trimmed; at least 1 s of speech is needed.
Cloning needs a pack built from Kyutai's gated kyutai/pocket-tts weights.

Examples:

  pockettts clone speaker.wav -o speaker.safetensors

  pockettts clone voz.flac -o voz.safetensors --language spanish

  pockettts clone speaker.wav -o speaker.safetensors --model-dir ./pack

  pockettts clone interview.mp3 -o speaker.bin --model-dir ./pack

  pockettts tts "Hello." --voice-file speaker.safetensors --model-dir ./pack
"""


def _warn(message: str) -> None:
    sys.stderr.write(f"pockettts: warning: {message}\n")
    sys.stderr.flush()


@takes_model_flags()
def clone_command(
    audio: Path = typer.Argument(..., metavar="AUDIO", help="The recording to clone."),
    output: Path = typer.Option(
        ..., "-o", "--output", metavar="FILE", help="Voice file to write: .safetensors or .bin."
    ),
    model: ModelFlags = MODEL,
    quiet: bool = flags.quiet(),
) -> None:
    from pocketcli.voices.files import check_voice_suffix
    from pocketcli.voices.formats import BIN_MAX_FRAMES
    from pocketcli.voices.state import VoiceError

    try:
        check_voice_suffix(output)
    except VoiceError as exc:
        raise click.BadParameter(str(exc), param_hint="-o/--output") from None
    checks.recording(audio)
    checks.writable_file(output, "-o/--output")
    clash = checks.first_clash([("-o", output)], checks.model_inputs(model))
    if clash is not None:
        raise click.UsageError(clash)
    choice = model.request(quiet=quiet)

    from pocketcli.voices.cloning import require_cloning

    started = time.perf_counter()
    tts = load_model(choice, quiet=quiet)
    require_cloning(tts.runtime)  # the gated-weights message before any decoding
    loaded = time.perf_counter()
    voice = tts.voices.clone(audio, on_warning=_warn)
    cloned = time.perf_counter()
    tts.voices.save(voice, output, on_warning=_warn)
    if not quiet:
        frames = voice.conditioning.shape[0] if voice.conditioning is not None else 0
        if output.suffix.lower() == ".bin":  # what the file holds, as the warning said
            frames = min(frames, BIN_MAX_FRAMES)
        seconds = frames * tts._samples_per_frame / tts.sample_rate
        sys.stderr.write(
            f"wrote {output}: {seconds:.2f} s of voice prompt ({frames} frames),"
            f" load {loaded - started:.2f} s, cloning {cloned - loaded:.2f} s\n"
        )
