"""``pockettts tts``: text in, WAV out (one file, a batch, or a stream on stdout)."""

from __future__ import annotations

from pathlib import Path

import typer

from pocketcli.cli import flags
from pocketcli.cli.fluid_compat import HELP_LINE, accept_fluidaudio_flags
from pocketcli.cli.habits import translate_habits
from pocketcli.cli.model_options import MODEL, ModelFlags, notice, takes_model_flags
from pocketcli.cli.speak import DEFAULT_OUTPUT, TtsFlags, run_tts
from pocketcli.text.chunking import MAX_TOKENS_PER_CHUNK

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

  pockettts tts "Hi." -o hi.wav --words --captions srt  (hi.json, hi.srt beside it)

  pockettts tts "Read along." --play --words -      (each word on stdout as it is decided)
"""


@takes_model_flags()
def tts_command(
    text_arg: str | None = typer.Argument(None, metavar="TEXT", help="The text to speak."),
    text: str | None = typer.Option(
        None, "--text", metavar="TEXT", help="The text to speak (instead of TEXT)."
    ),
    output: str | None = typer.Option(
        None,
        "-o",
        "--output",
        "--output-path",  # Kyutai's pocket-tts
        "--output-file",  # piper
        "--output_file",
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
    speed: float | None = flags.speed(),
    eos_threshold: float | None = typer.Option(
        None,
        "--eos-threshold",
        metavar="X",
        help="End-of-speech threshold (pocket-tts's; default: the model's).",
    ),
    frames_after_eos: int | None = typer.Option(
        None,
        "--frames-after-eos",
        metavar="N",
        help="Frames spoken after the end of speech (pocket-tts's; default: from the text).",
    ),
    quantize: bool = typer.Option(
        False, "--quantize", hidden=True, help="Kyutai's pocket-tts: --precision int8."
    ),
    piper_model: str | None = typer.Option(
        None, "-m", "--model", hidden=True, help="piper's model: --model-dir or --language."
    ),
    output_raw: bool = typer.Option(
        False, "--output-raw", "--output_raw", hidden=True, help="piper's: -o - --format s16le."
    ),
    backend: str = typer.Option(
        "pocket",
        "--backend",
        metavar="NAME",
        help="pocket or pockettts (FluidAudio's flag).",
        autocompletion=flags.complete_from(("pocket", "pockettts")),
    ),
    no_deess: bool = typer.Option(
        False,
        "--no-deess",
        help="No 80 Hz high-pass or 6 kHz de-essing shelf (peak normalising stays).",
    ),
    metrics: str | None = typer.Option(
        None,
        "--metrics",
        metavar="FILE|-",
        help="Write timing metrics (JSON); '-': print them on stdout.",
    ),
    model: ModelFlags = MODEL,
    input_file: Path | None = typer.Option(
        None,
        "--input-file",
        metavar="FILE",
        help="One utterance per line ('id|text' or text; or JSON lines, or a CSV with an"
        " id,text header); '-' = stdin.",
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
    streams: str | None = typer.Option(
        None,
        "--streams",
        metavar="N",
        help="Batch in one process: N lines spoken at once (rows of one batch), or auto.",
    ),
    ray: str | None = typer.Option(
        None,
        "--ray",
        metavar="[ADDRESS]",
        help="Batch on Ray: alone, a local instance; auto or HOST:PORT joins a cluster.",
    ),
    max_tokens: int | None = typer.Option(
        None,
        "--max-tokens",
        min=1,
        metavar="N",
        help=f"Tokens per text chunk (default {MAX_TOKENS_PER_CHUNK}).",
    ),
    no_normalize: bool = typer.Option(
        False,
        "--no-normalize",
        help="Speak the text as written: no number reading, no [pause] or SSML.",
    ),
    ssml: bool | None = typer.Option(
        None, "--ssml/--no-ssml", help="Read the text as SSML (default: when it starts <speak>)."
    ),
    quiet: bool = flags.quiet("No timing summary or notes on stderr (warnings still print)."),
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
    words_file: str | None = typer.Option(
        None,
        "--words",
        metavar="[FILE|-]",
        help="Also write each word's start and end (seconds) as a JSON list; no FILE: beside"
        " the audio (a.wav -> a.json, and each line's in a batch); '-': print each word"
        " on stdout as it is decided (JSON Lines, with --play and --follow too).",
    ),
    captions_file: str | None = typer.Option(
        None,
        "--captions",
        metavar="[FILE|-|srt|vtt]",
        help="Also write captions of a few words a cue: .srt or .vtt, by extension; no FILE:"
        " beside the audio (a.wav -> a.vtt; srt or vtt picks), each line's in a batch;"
        " '-': print them on stdout as WebVTT at the end.",
    ),
) -> None:
    """Declarations only: the work is ``cli.speak.run_tts``."""
    given = TtsFlags(
        text_arg=text_arg,
        text=text,
        output=output,
        audio_format=audio_format,
        force=force,
        voice=voice,
        voice_file=voice_file,
        clone_voice=clone_voice,
        save_voice=save_voice,
        temperature=temperature,
        seed=seed,
        noise_clamp=noise_clamp,
        speed=speed,
        eos_threshold=eos_threshold,
        frames_after_eos=frames_after_eos,
        quantize=quantize,
        piper_model=piper_model,
        output_raw=output_raw,
        backend=backend,
        no_deess=no_deess,
        metrics=metrics,
        input_file=input_file,
        output_dir=output_dir,
        overwrite=overwrite,
        accept_refused=accept_refused,
        jobs=jobs,
        ray=ray,
        streams=streams,
        max_tokens=max_tokens,
        no_normalize=no_normalize,
        ssml=ssml,
        quiet=quiet,
        play=play,
        device=device,
        follow=follow,
        words_file=words_file,
        captions_file=captions_file,
    )
    run_tts(*translate_habits(given, model))


tts_command = accept_fluidaudio_flags(tts_command, notice)
