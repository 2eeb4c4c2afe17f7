"""``pockettts tts``: text in, WAV out."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import typer

from pocketcli.cli import clickcompat as click
from pocketcli.packs.manifest import PRECISIONS
from pocketcli.text import EmptyTextError

HELP = """Speak TEXT (or --text, or standard input) into a 24 kHz mono WAV file.

Examples:

  pockettts tts "Hello world." -o hello.wav --model-dir ./pack

  pockettts tts "Same words, same audio." --seed 7 --model-dir ./pack

  pockettts tts --text "Cloned." --voice-file voice.safetensors --model-dir ./pack
"""


def _read_stdin() -> str:
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise click.UsageError(f"standard input is not UTF-8 text (byte {exc.start})") from None


def tts_command(
    text_arg: str | None = typer.Argument(None, metavar="[TEXT]", help="The text to speak."),
    text: str | None = typer.Option(None, "--text", help="The text to speak (instead of TEXT)."),
    output: Path = typer.Option(Path("output.wav"), "-o", "--output", help="WAV file to write."),
    model_dir: Path | None = typer.Option(None, "--model-dir", help="A built ONNX model pack."),
    voice_file: Path | None = typer.Option(
        None, "--voice-file", help="Voice state (.safetensors, Kyutai's export-voice format)."),
    temperature: float | None = typer.Option(
        None, "--temperature", min=0.0, help="Sampling temperature (default: the model's)."),
    seed: int | None = typer.Option(
        None, "--seed", help="Seed for the noise: same seed, same audio."),
    precision: str = typer.Option("fp32", "--precision", help=f"One of: {', '.join(PRECISIONS)}."),
    max_tokens: int = typer.Option(50, "--max-tokens", min=1, help="Tokens per text chunk."),
    quiet: bool = typer.Option(False, "-q", "--quiet", help="No timing summary on stderr."),
) -> None:
    if text_arg is not None and text is not None:
        raise click.UsageError("give the text either as TEXT or with --text, not both")
    words = text_arg if text_arg is not None else text
    if words is None:
        if sys.stdin.isatty():
            raise click.UsageError("no text: give TEXT, --text, or pipe text on standard input")
        words = _read_stdin()
    if "\x00" in words:
        raise click.UsageError("the text contains NUL bytes: is it a binary file?")
    if not words.strip():
        raise click.UsageError("the text is empty")
    if precision not in PRECISIONS:
        raise click.BadParameter(f"{precision!r}; choose from {', '.join(PRECISIONS)}",
                                 param_hint="--precision")
    if model_dir is None:
        raise click.UsageError("no model: pass --model-dir with a built pack")

    from pocketcli.api import PocketTTS
    from pocketcli.audio.wav import write_wav

    started = time.perf_counter()
    tts = PocketTTS.load(model_dir, precision=precision)
    voice = tts.load_voice(voice_file) if voice_file is not None else None
    loaded = time.perf_counter()
    try:
        audio = tts.synthesize(words, voice, temperature=temperature, seed=seed,
                               max_tokens=max_tokens)
    except EmptyTextError:
        raise click.UsageError("the text is empty") from None
    synthesized = time.perf_counter()
    write_wav(output, audio, tts.sample_rate)
    if not quiet:
        seconds = len(audio) / tts.sample_rate
        synth = synthesized - loaded
        rtfx = seconds / synth if synth > 0 else float("inf")
        sys.stderr.write(
            f"wrote {output} ({seconds:.2f} s of audio): load {loaded - started:.2f} s, "
            f"synthesis {synth:.2f} s, RTFx {rtfx:.2f}\n")
