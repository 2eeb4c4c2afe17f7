"""``pockettts tts``: text in, WAV out (one file, a batch, or a stream on stdout)."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import typer

from pocketcli.cli import clickcompat as click
from pocketcli.cli.model_options import (
    BACKENDS,
    COMPUTE_UNITS,
    RUNTIMES,
    check_voice_name,
    choose_voice,
    load_model,
    validate_choice,
)
from pocketcli.cli.text_input import read_text
from pocketcli.errors import UserError

HELP = """Speak TEXT (or --text, or standard input) into a 24 kHz mono WAV file.

Examples:

  pockettts tts "Hello world." -o hello.wav

  pockettts tts "Hola." --language spanish -v lola -o hola.wav

  pockettts tts "Same seed, same audio." --seed 7 --model-dir ./pack

  pockettts tts "In my voice." --clone-voice me.wav --save-voice me.safetensors

  pockettts tts --input-file lines.txt --output-dir out/      (one WAV per line)

  echo "Streamed." | pockettts tts -o - | aplay

  pockettts tts "It costs $5. [pause:1s] Thanks!"       (read as "five dollars", 1 s pause)
"""


@dataclass
class Timing:
    load: float = 0.0
    synthesis: float = 0.0
    audio: float = 0.0


def _read_text(text_arg: str | None, text: str | None, input_file: Path | None) -> str | None:
    if text_arg is not None and text is not None:
        raise click.UsageError("give the text either as TEXT or with --text, not both")
    words = text_arg if text_arg is not None else text
    if input_file is not None:
        if words is not None:
            raise click.UsageError("--input-file reads the text from a file: drop TEXT/--text")
        return None
    return read_text(words)


def tts_command(
    text_arg: str | None = typer.Argument(None, metavar="[TEXT]", help="The text to speak."),
    text: str | None = typer.Option(None, "--text", help="The text to speak (instead of TEXT)."),
    output: str = typer.Option(
        "output.wav", "-o", "--output", help="WAV file to write; '-' streams WAV to stdout."
    ),
    language: str | None = typer.Option(
        None, "--language", help="Language pack, e.g. english, spanish, german_24l."
    ),
    voice: str | None = typer.Option(None, "-v", "--voice", help="Built-in voice name (alba...)."),
    voice_file: Path | None = typer.Option(
        None, "--voice-file", help="Voice file: .safetensors (Kyutai state) or .bin (FluidAudio)."
    ),
    clone_voice: Path | None = typer.Option(
        None, "--clone-voice", help="Clone the voice of this recording (WAV, FLAC, MP3...)."
    ),
    save_voice: Path | None = typer.Option(
        None, "--save-voice", help="With --clone-voice: save the voice (.safetensors or .bin)."
    ),
    temperature: float | None = typer.Option(
        None, "--temperature", min=0.0, help="Sampling temperature (default: the model's)."
    ),
    seed: int | None = typer.Option(
        None, "--seed", help="Seed for the noise: same seed, same audio."
    ),
    noise_clamp: float | None = typer.Option(
        None,
        "--noise-clamp",
        help="Truncate the sampling noise to +-this (pocket-tts's noise_clamp; default: none).",
    ),
    runtime: str = typer.Option(
        "auto", "--runtime", help="auto, onnx or coreml.", autocompletion=lambda: list(RUNTIMES)
    ),
    precision: str | None = typer.Option(
        None,
        "--precision",
        help="onnx: fp32 (default), int8 or int4; coreml: fp16 or int8.",
        autocompletion=lambda: ["fp32", "fp16", "int8", "int4"],
    ),
    compute_units: str = typer.Option(
        "default",
        "--compute-units",
        help="CoreML: default, no-ane, all, cpu-gpu, cpu-ane, cpu-only.",
        autocompletion=lambda: list(COMPUTE_UNITS),
    ),
    placement: str = typer.Option(
        "gpu", "--placement", help="CoreML: gpu or ane.", autocompletion=lambda: ["gpu", "ane"]
    ),
    backend: str = typer.Option("pocket", "--backend", help="Accepted for FluidAudio parity."),
    no_deess: bool = typer.Option(
        False,
        "--no-deess",
        help="Raw model audio: no 80 Hz high-pass, 6 kHz de-essing shelf or peak normalising.",
    ),
    metrics: Path | None = typer.Option(None, "--metrics", help="Write timing metrics (JSON)."),
    model_dir: Path | None = typer.Option(None, "--model-dir", help="A built ONNX model pack."),
    config: str | None = typer.Option(
        None, "--config", help="Kyutai config YAML (path, https:// or hf://), not a language."
    ),
    offline: bool = typer.Option(False, "--offline", help="Never touch the network."),
    input_file: Path | None = typer.Option(
        None, "--input-file", help="One utterance per line ('id|text' or text); '-' = stdin."
    ),
    output_dir: Path | None = typer.Option(None, "--output-dir", help="Where batch WAVs go."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Batch: redo finished files."),
    max_tokens: int = typer.Option(50, "--max-tokens", min=1, help="Tokens per text chunk."),
    no_normalize: bool = typer.Option(
        False,
        "--no-normalize",
        help="Speak the text as written: no number reading, no [pause] or SSML.",
    ),
    ssml: bool | None = typer.Option(
        None, "--ssml/--no-ssml", help="Read the text as SSML (default: when it starts <speak>)."
    ),
    quiet: bool = typer.Option(False, "-q", "--quiet", help="No timing summary on stderr."),
) -> None:
    started = time.perf_counter()
    if backend.lower() not in BACKENDS:
        raise click.BadParameter(
            f"{backend!r}; this tool speaks with: {', '.join(BACKENDS)}", param_hint="--backend"
        )
    if save_voice is not None and clone_voice is None:
        raise click.UsageError("--save-voice needs --clone-voice")
    if save_voice is not None:
        from pocketcli.voices.files import check_voice_suffix
        from pocketcli.voices.state import VoiceError

        try:
            check_voice_suffix(save_voice)
        except VoiceError as exc:
            raise click.BadParameter(str(exc), param_hint="--save-voice") from None
    _check_noise_clamp(noise_clamp)
    words = _read_text(text_arg, text, input_file)
    if input_file is not None and output_dir is None:
        raise click.UsageError("--input-file needs --output-dir")
    if output_dir is not None and input_file is None:
        raise click.UsageError("--output-dir goes with --input-file")
    choice = validate_choice(
        model_dir, language, config, runtime, precision, compute_units, placement, offline
    )
    check_voice_name(choice, voice)
    batch_data = _read_batch_input(input_file) if input_file is not None else None

    timing = Timing()
    t0 = time.perf_counter()
    tts = load_model(choice, quiet=quiet)
    chosen = choose_voice(
        tts, choice, voice, voice_file, clone_voice, save_voice, on_warning=None if quiet else _warn
    )
    voice_state, voice_name = chosen.state, chosen.name
    timing.load = time.perf_counter() - t0
    options = {
        "temperature": temperature,
        "seed": seed,
        "noise_clamp": noise_clamp,
        "max_tokens": max_tokens,
        "normalize": not no_normalize,
        "ssml": ssml,
        "on_warning": None if quiet else _warn,
    }

    if batch_data is not None:
        from pocketcli.cli.batch_run import run_batch

        assert output_dir is not None
        failed = run_batch(
            tts,
            voice_state,
            batch_data,
            output_dir,
            overwrite=overwrite,
            postprocess=not no_deess,
            quiet=quiet,
            options=options,
        )
        raise click.Exit(1 if failed else 0)

    assert words is not None
    from pocketcli.normalize import MarkupError
    from pocketcli.text import EmptyTextError

    try:
        if output == "-":
            _stream_to_stdout(tts, words, voice_state, not no_deess, options, timing)
        else:
            _write_file(tts, words, voice_state, Path(output), not no_deess, options, timing)
    except (MarkupError, EmptyTextError) as exc:
        raise click.UsageError(str(exc)) from None
    total = time.perf_counter() - started
    if metrics is not None:
        _write_metrics(metrics, words, voice_name, output, timing, total)
    if not quiet:
        rtfx = timing.audio / timing.synthesis if timing.synthesis > 0 else 0.0
        where = "stdout" if output == "-" else str(Path(output).resolve())
        sys.stderr.write(
            f"load {timing.load:.3f} s, synthesis {timing.synthesis:.3f} s, "
            f"audio {timing.audio:.3f} s, RTFx {rtfx:.2f}x, total {total:.3f} s -> {where}\n"
        )


def _check_noise_clamp(noise_clamp: float | None) -> None:
    from pocketcli.options import OptionsError, SpeakOptions

    try:
        SpeakOptions(noise_clamp=noise_clamp)
    except OptionsError as exc:
        raise click.BadParameter(str(exc), param_hint="--noise-clamp") from None


def _warn(message: str) -> None:
    sys.stderr.write(f"pockettts: warning: {message}\n")


def _read_batch_input(input_file: Path) -> bytes:
    if str(input_file) == "-":
        return sys.stdin.buffer.read()
    try:
        return input_file.read_bytes()
    except OSError as exc:
        raise UserError(f"cannot read {input_file}: {exc.strerror or exc}") from None


def _postprocessed(tts, audio, postprocess: bool):
    if not postprocess:
        return audio
    from pocketcli.audio.postprocess import apply_output_chain

    return apply_output_chain(audio, tts.sample_rate)


def _write_file(
    tts, words: str, voice, output: Path, postprocess: bool, options: dict, timing: Timing
) -> None:
    from pocketcli.audio.wav import write_wav

    t0 = time.perf_counter()
    audio = tts.synthesize(words, voice, **options)
    timing.synthesis = time.perf_counter() - t0
    timing.audio = len(audio) / tts.sample_rate
    if output.parent != Path(""):
        output.parent.mkdir(parents=True, exist_ok=True)
    write_wav(output, _postprocessed(tts, audio, postprocess), tts.sample_rate)


def _stream_to_stdout(
    tts, words: str, voice, postprocess: bool, options: dict, timing: Timing
) -> None:
    """Frames go out as they are made; causal filters only (no peak normalising)."""
    from pocketcli.audio.postprocess import OutputChain
    from pocketcli.audio.wav import WavStream

    chain = OutputChain(tts.sample_rate) if postprocess else None
    stream = WavStream(sys.stdout.buffer, tts.sample_rate)
    t0 = time.perf_counter()
    samples = 0
    for frame in tts.stream(words, voice, **options):
        stream.write(chain.process(frame.audio) if chain else frame.audio)
        samples += frame.audio.size
    timing.synthesis = time.perf_counter() - t0
    timing.audio = samples / tts.sample_rate


def _write_metrics(
    path: Path, words: str, voice_name: str, output: str, timing: Timing, total: float
) -> None:
    from pocketcli.atomic import atomic_path

    report = {
        "backend": "pockettts",
        "text": words,
        "voice": voice_name,
        "output": output if output == "-" else str(Path(output).resolve()),
        "model_load_time_s": round(timing.load, 6),
        "inference_time_s": round(timing.synthesis, 6),
        "audio_duration_s": round(timing.audio, 6),
        "realtime_speed": round(timing.audio / timing.synthesis, 6) if timing.synthesis else 0.0,
        "total_time_s": round(total, 6),
    }
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
