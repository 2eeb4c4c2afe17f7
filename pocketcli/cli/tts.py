"""``pockettts tts``: text in, WAV out (one file, a batch, or a stream on stdout)."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import typer

from pocketcli.cli import checks, flags
from pocketcli.cli import clickcompat as click
from pocketcli.cli.fluid_compat import HELP_LINE, accept_fluidaudio_flags
from pocketcli.cli.model_options import (
    BACKENDS,
    check_voice_name,
    choose_voice,
    load_model,
    names_voices_inside,
    notice,
    validate_choice,
)
from pocketcli.cli.text_input import read_text
from pocketcli.errors import UserError

HELP = f"""Speak TEXT (or --text, or standard input) into a 24 kHz mono WAV file.

A script written for FluidAudio's `fluidaudio tts --backend pocket` runs
unchanged. Where pockettts deliberately differs: the default temperature is
0.3 (Kyutai's choice; FluidAudio's is 0.7), a relative --metrics path is
relative to the current folder (FluidAudio: under ./fluidaudio_cli/), and
bad values are usage errors (exit 2) instead of a log line and exit 0.
--no-deess drops the high-pass and de-essing filters and keeps peak
normalisation, as FluidAudio does. {HELP_LINE}

Examples:

  pockettts tts "Hello world." -o hello.wav

  pockettts tts "Hola." --language spanish -v lola -o hola.wav

  pockettts tts "Same seed, same audio." --seed 7 --model-dir ./pack

  pockettts tts "In my voice." --clone-voice me.wav --save-voice me.safetensors

  pockettts tts --input-file lines.txt --output-dir out/      (one WAV per line)

  pockettts tts --input-file lines.txt --output-dir out/ --jobs auto   (all cores)

  echo "Streamed." | pockettts tts -o - | aplay

  pockettts tts "Straight to the speakers." --play

  tail -f chat.log | pockettts tts --follow --play       (each line as it comes)

  pockettts tts "It costs $5. [pause:1s] Thanks!"       (read as "five dollars", 1 s pause)
"""

DEFAULT_OUTPUT = "output.wav"


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
    text_arg: str | None = typer.Argument(None, metavar="TEXT", help="The text to speak."),
    text: str | None = typer.Option(
        None, "--text", metavar="TEXT", help="The text to speak (instead of TEXT)."
    ),
    output: str | None = typer.Option(
        None,
        "-o",
        "--output",
        metavar="FILE",
        help=f"Audio file to write (default {DEFAULT_OUTPUT}); '-' streams to stdout.",
    ),
    audio_format: str | None = typer.Option(
        None,
        "--format",
        metavar="FORMAT",
        help="wav, flac, ogg, opus, mp3, s16le or f32le (default: from the -o name, else wav).",
        autocompletion=lambda: ["wav", "flac", "ogg", "opus", "mp3", "s16le", "f32le"],
    ),
    force: bool = typer.Option(False, "--force", help="With -o -: write audio to a terminal."),
    language: str | None = flags.language(),
    voice: str | None = flags.voice(),
    voice_file: Path | None = flags.voice_file(),
    clone_voice: Path | None = typer.Option(
        None,
        "--clone-voice",
        metavar="AUDIO",
        help="Clone the voice of this recording (WAV, FLAC, MP3...); wins over --voice-file.",
    ),
    save_voice: Path | None = typer.Option(
        None,
        "--save-voice",
        metavar="FILE",
        help="With --clone-voice: save the voice (.safetensors or .bin).",
    ),
    temperature: float | None = flags.temperature(),
    seed: int | None = flags.seed(),
    noise_clamp: float | None = flags.noise_clamp(),
    runtime: str = flags.runtime(),
    precision: str | None = flags.precision(),
    compute_units: str | None = flags.compute_units(),
    placement: str | None = flags.placement(),
    backend: str = typer.Option(
        "pocket", "--backend", metavar="NAME", help="pocket or pockettts (FluidAudio's flag)."
    ),
    no_deess: bool = typer.Option(
        False,
        "--no-deess",
        help="No 80 Hz high-pass or 6 kHz de-essing shelf (peak normalising stays).",
    ),
    metrics: Path | None = typer.Option(
        None, "--metrics", metavar="FILE", help="Write timing metrics (JSON)."
    ),
    model_dir: Path | None = flags.model_dir(),
    config: str | None = flags.config(),
    offline: bool = flags.offline(),
    input_file: Path | None = typer.Option(
        None,
        "--input-file",
        metavar="FILE",
        help="One utterance per line ('id|text' or text); '-' = stdin.",
    ),
    output_dir: Path | None = typer.Option(
        None, "--output-dir", metavar="DIR", help="Where batch WAVs go."
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="Batch: redo finished files."),
    accept_refused: bool = typer.Option(
        False,
        "--accept-refused",
        help="Batch: lines refused for their text (reported, recorded) leave the exit status 0.",
    ),
    jobs: str | None = typer.Option(
        None, "--jobs", metavar="N", help="Batch: N worker processes, or auto (measured split)."
    ),
    ray: str | None = typer.Option(
        None,
        "--ray",
        metavar="[ADDRESS]",
        help="Batch on Ray: alone, a local instance; auto or HOST:PORT joins a cluster.",
    ),
    max_tokens: int = typer.Option(
        50, "--max-tokens", min=1, metavar="N", help="Tokens per text chunk."
    ),
    no_normalize: bool = typer.Option(
        False,
        "--no-normalize",
        help="Speak the text as written: no number reading, no [pause] or SSML.",
    ),
    ssml: bool | None = typer.Option(
        None, "--ssml/--no-ssml", help="Read the text as SSML (default: when it starts <speak>)."
    ),
    quiet: bool = flags.quiet("No timing summary or notices on stderr."),
    play: bool = typer.Option(
        False, "--play", help="Play on the sound device as it is generated (-o: also a file)."
    ),
    device: str | None = typer.Option(
        None,
        "--device",
        metavar="DEVICE",
        help="With --play: output device, by number or part of its name.",
    ),
    follow: bool = typer.Option(
        False, "--follow", help="Speak standard input line by line (or sentence) as it arrives."
    ),
) -> None:
    started = time.perf_counter()
    if backend.lower() not in BACKENDS:
        raise click.BadParameter(
            f"{backend!r}; this tool speaks with: {', '.join(BACKENDS)}", param_hint="--backend"
        )
    say = (lambda _m: None) if quiet else notice
    if save_voice is not None and clone_voice is None:
        raise click.UsageError("--save-voice needs --clone-voice")
    if save_voice is not None:
        from pocketcli.voices.files import check_voice_suffix
        from pocketcli.voices.state import VoiceError

        try:
            check_voice_suffix(save_voice)
        except VoiceError as exc:
            raise click.BadParameter(str(exc), param_hint="--save-voice") from None
    _voice_precedence(voice, voice_file, clone_voice, say)
    if input_file is not None:
        if output_dir is None:
            raise click.UsageError("--input-file needs --output-dir")
        if output is not None:
            raise click.UsageError("--input-file writes one WAV per line to --output-dir: drop -o")
        if metrics is not None:
            raise click.UsageError("--metrics reports one utterance: drop it with --input-file")
    elif output_dir is not None:
        raise click.UsageError("--output-dir goes with --input-file")
    elif jobs is not None or ray is not None:
        raise click.UsageError("--jobs and --ray go with --input-file")
    elif accept_refused:
        raise click.UsageError("--accept-refused goes with --input-file")
    from pocketcli.cli.live import prepare_live

    live = prepare_live(
        play=play,
        device=device,
        follow=follow,
        text_given=text_arg is not None or text is not None,
        batch=input_file is not None,
        output=output,
        default_output=DEFAULT_OUTPUT,
    )
    output = output or DEFAULT_OUTPUT
    options = _speak_options(
        temperature, seed, max_tokens, no_normalize, ssml, no_deess, noise_clamp
    )
    out_format = _check_output(output, audio_format, force)
    # Every path before any download, build or synthesis.
    checks.readable_file(voice_file, "voice file")
    if clone_voice is None:  # else the voice file is ignored
        checks.voice_file(voice_file, voice)
    checks.recording(clone_voice)
    checks.readable_file(input_file, "input file")
    checks.writable_file(save_voice, "--save-voice file")
    checks.writable_file(metrics, "metrics file")
    checks.writable_dir(output_dir, "output folder")
    if input_file is None:
        checks.writable_file(output if live is None else live.output, "output file")
    words = None if follow else _read_text(text_arg, text, input_file)
    choice = validate_choice(
        model_dir,
        language,
        config,
        runtime,
        precision,
        compute_units,
        placement,
        offline,
        quiet=quiet,
    )
    if voice_file is None and clone_voice is None:
        check_voice_name(choice, voice)
    batch_data = _read_batch_input(input_file) if input_file is not None else None
    if batch_data is not None:
        from pocketcli.cli.batch_command import VoiceFlags, run_batch_command

        assert output_dir is not None
        if audio_format is not None and audio_format.lower() != "wav":
            raise click.UsageError("--input-file writes one WAV per line: drop --format")
        voices = VoiceFlags(voice, voice_file, clone_voice, save_voice)
        raise click.Exit(
            run_batch_command(
                choice,
                batch_data,
                output_dir,
                options,
                voices,
                jobs=jobs,
                ray=ray,
                overwrite=overwrite,
                accept_refused=accept_refused,
                quiet=quiet,
                on_warning=None if quiet else _warn,
            )
        )

    timing = Timing()
    t0 = time.perf_counter()
    tts = load_model(choice, quiet=quiet)
    chosen = choose_voice(
        tts, voice, voice_file, clone_voice, save_voice, on_warning=None if quiet else _warn
    )
    voice_state, voice_name = chosen.state, chosen.name
    timing.load = time.perf_counter() - t0
    warn = None if quiet else _warn

    if live is not None:
        from pocketcli.cli.live import run_live

        run_live(
            live,
            tts,
            voice_state,
            options,
            words=words,
            quiet=quiet,
            on_warning=warn,
            timing=timing,
            fmt=out_format,
        )
        if metrics is not None:
            total = time.perf_counter() - started
            _write_metrics(metrics, words or "", voice_name, live.output or "", timing, total)
        return

    assert words is not None
    from pocketcli.normalize import MarkupError
    from pocketcli.text import EmptyTextError

    try:
        if output == "-":
            _stream_to_stdout(tts, words, voice_state, options, warn, timing, out_format)
        else:
            _write_file(tts, words, voice_state, Path(output), options, warn, timing, out_format)
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


tts_command = accept_fluidaudio_flags(tts_command, notice)


def _voice_precedence(voice, voice_file, clone_voice, say) -> None:
    """FluidAudio's order: --clone-voice, then --voice-file, then --voice; one line
    says which of several wins, so nothing is ignored silently."""
    if clone_voice is None and names_voices_inside(voice_file):
        voice = None  # -v picks a voice inside the file: nothing is ignored
    given = [
        (flag, value)
        for flag, value in (
            ("--clone-voice", clone_voice),
            ("--voice-file", voice_file),
            ("--voice", voice),
        )
        if value is not None
    ]
    if len(given) > 1:
        ignored = " and ".join(flag for flag, _ in given[1:])
        say(f"{given[0][0]} wins over {ignored} (FluidAudio's order); {ignored} ignored")


def _speak_options(temperature, seed, max_tokens, no_normalize, ssml, no_deess, noise_clamp):
    """The options of the flags; a refused value raises OptionsError, which main turns
    into a usage error naming the flag (cli.flags.OPTION_FLAGS)."""
    from pocketcli.options import SpeakOptions

    return SpeakOptions(
        temperature=temperature,
        seed=seed,
        max_tokens=max_tokens,
        normalize=not no_normalize,
        ssml=ssml,
        output_chain=not no_deess,
        peak_normalize=True,  # FluidAudio's WAV writer peak-normalises, --no-deess or not
        noise_clamp=noise_clamp,
    )


def _warn(message: str) -> None:
    sys.stderr.write(f"pockettts: warning: {message}\n")


def _read_batch_input(input_file: Path) -> bytes:
    if str(input_file) == "-":
        return sys.stdin.buffer.read()
    try:
        return input_file.read_bytes()
    except OSError as exc:
        raise UserError(f"cannot read {input_file}: {exc.strerror or exc}") from None


def _check_output(output: str, audio_format: str | None, force: bool):
    """The output format, and no binary audio on a terminal unless forced."""
    from pocketcli.audio.output import AudioError, format_for

    try:
        fmt = format_for(None if output == "-" else output, audio_format)
    except AudioError as exc:
        raise click.BadParameter(str(exc), param_hint="--format") from None
    if output == "-" and not force and sys.stdout.isatty():
        raise click.UsageError(
            "not writing binary audio to a terminal: redirect it (-o - | aplay) or add --force"
        )
    return fmt


def _write_file(tts, words: str, voice, output: Path, options, warn, timing: Timing, fmt) -> None:
    """Frames go to the file as they are made (see audio/output.py): bounded memory;
    peak normalisation is a second pass over the file."""
    from pocketcli.audio.output import open_audio_writer

    if output.parent != Path(""):
        output.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    peak = options.peak_normalized
    with open_audio_writer(output, fmt, tts.sample_rate, peak_normalize=peak) as writer:
        for frame in tts.stream(words, voice, options, on_warning=warn):
            writer.write(frame.audio, speech=not frame.is_pause)
        timing.synthesis = time.perf_counter() - t0
    timing.audio = writer.samples / tts.sample_rate


def _stream_to_stdout(tts, words: str, voice, options, warn, timing: Timing, fmt) -> None:
    """Frames go out as they are made; causal filters only (no peak normalising).

    A reader that goes away (``| head``) ends the run quietly, as Unix tools do.
    """
    from pocketcli.audio.output import AudioEncoder, check_finite

    t0 = time.perf_counter()
    samples = 0
    try:
        stream = AudioEncoder(sys.stdout.buffer, fmt, tts.sample_rate, flush=True)
        for frame in tts.stream(words, voice, options, on_warning=warn):
            check_finite(frame.audio)
            stream.write(frame.audio)
            samples += frame.audio.size
        stream.close()
    except BrokenPipeError:
        import os

        # Python would complain again when it flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise click.Exit(141) from None
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
    if path.parent != Path(""):
        path.parent.mkdir(parents=True, exist_ok=True)  # as FluidAudio does
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
