"""What ``pockettts tts`` does with its flags: one checker, then one mode.

``tts_command`` (``cli/tts.py``) only declares the flags and hands them here
as one ``TtsFlags`` with the ``ModelFlags``. ``check_flags`` holds every
rule between flags; ``check_paths`` checks every path before any download;
then exactly one mode runs: a batch (``--input-file``), live speech
(``--play``/``--follow``), audio on stdout (``-o -``) or a file.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pocketcli.cli import checks
from pocketcli.cli import clickcompat as click
from pocketcli.cli.model_options import (
    BACKENDS,
    ModelFlags,
    check_voice_name,
    choose_voice,
    load_model,
    names_voices_inside,
    notice,
)
from pocketcli.cli.stdio import stdout_failure
from pocketcli.cli.text_input import read_input_file, read_text
from pocketcli.cli.word_flags import WordOutputs

if TYPE_CHECKING:
    from pocketcli.api import ChosenVoice, PocketTTS
    from pocketcli.audio.output import OutputFormat
    from pocketcli.cli.live import LiveRequest
    from pocketcli.options import ModelRequest, SpeakOptions

DEFAULT_OUTPUT = "output.wav"
STDOUT = "-"


@dataclass(frozen=True)
class TtsFlags:
    """The flags of ``pockettts tts`` other than the model flags, as given."""

    text_arg: str | None = None
    text: str | None = None
    output: str | None = None
    audio_format: str | None = None
    force: bool = False
    voice: str | None = None
    voice_file: Path | None = None
    clone_voice: Path | None = None
    save_voice: Path | None = None
    temperature: float | None = None
    seed: int | None = None
    noise_clamp: float | None = None
    speed: float | None = None
    eos_threshold: float | None = None
    frames_after_eos: int | None = None
    backend: str = "pocket"
    no_deess: bool = False
    metrics: str | None = None  # a file, or "-": printed on standard output
    input_file: Path | None = None
    output_dir: Path | None = None
    overwrite: bool = False
    accept_refused: bool = False
    jobs: str | None = None
    ray: str | None = None
    streams: str | None = None
    max_tokens: int | None = None
    no_normalize: bool = False
    ssml: bool | None = None
    quiet: bool = False
    play: bool = False
    device: str | None = None
    follow: bool = False
    words_file: str | None = None  # --words: FILE, json (beside the audio) or - (printed)
    captions_file: str | None = None  # --captions: FILE (.srt, .vtt), or srt/vtt beside
    # Habits of the tools people come from (``cli/habits.py``).
    quantize: bool = False  # Kyutai's pocket-tts
    piper_model: str | None = None  # piper's -m
    output_raw: bool = False  # piper's --output-raw

    @property
    def text_given(self) -> bool:
        return self.text_arg is not None or self.text is not None

    @property
    def word_outputs(self) -> WordOutputs:
        return WordOutputs(self.words_file, self.captions_file)


@dataclass
class Timing:
    load: float = 0.0
    synthesis: float = 0.0
    audio: float = 0.0


def run_tts(f: TtsFlags, model: ModelFlags) -> None:
    """The whole command: every check before any download, then one mode."""
    started = time.perf_counter()
    check_flags(f)
    _voice_precedence(f, (lambda _m: None) if f.quiet else notice)
    from pocketcli.cli.live import prepare_live

    live = prepare_live(
        play=f.play,
        device=f.device,
        follow=f.follow,
        text_given=f.text_given,
        batch=f.input_file is not None,
        output=f.output,
        default_output=DEFAULT_OUTPUT,
    )
    output = f.output or DEFAULT_OUTPUT
    options = speak_options(f)
    out_format = check_output(output, f.audio_format, f.force, batch=f.input_file is not None)
    check_paths(f, None if live is None else live.output, output, model)
    words = None if f.follow else _read_text(f)
    choice = model.request(quiet=f.quiet)
    if f.voice_file is None and f.clone_voice is None:
        check_voice_name(choice, f.voice)
    if f.input_file is not None:
        raise click.Exit(run_batch_mode(f, choice, options))
    timing = Timing()
    t0 = time.perf_counter()
    tts = load_model(choice, quiet=f.quiet)
    chosen = _choose(tts, f)
    timing.load = time.perf_counter() - t0
    if live is not None:
        run_live_mode(f, live, tts, chosen, options, words, timing, out_format)
        shown = live.output or ""
    else:
        assert words is not None
        speak_once(
            tts, words, chosen.state, output, options, timing, out_format, warn, f.word_outputs
        )
        shown = output
    total = time.perf_counter() - started
    if f.metrics is not None:
        write_metrics(f.metrics, words or "", chosen.name, shown, timing, total)
    if live is None and not f.quiet:
        _summary(timing, total, output)


def check_flags(f: TtsFlags) -> None:
    """Every rule between the flags (one place), before any path or model work."""
    if f.backend.lower() not in BACKENDS:
        raise click.BadParameter(
            f"{f.backend!r}; this tool speaks with: {', '.join(BACKENDS)}", param_hint="--backend"
        )
    if f.save_voice is not None and f.clone_voice is None:
        raise click.UsageError("--save-voice needs --clone-voice")
    if f.save_voice is not None:
        from pocketcli.voices.files import check_voice_suffix
        from pocketcli.voices.state import VoiceError

        try:
            check_voice_suffix(f.save_voice)
        except VoiceError as exc:
            raise click.BadParameter(str(exc), param_hint="--save-voice") from None
    if f.text_arg is not None and f.text is not None:
        raise click.UsageError("give the text either as TEXT or with --text, not both")
    _check_batch_flags(f)
    _check_stdout(f)
    _check_words_flags(f)


def _check_stdout(f: TtsFlags) -> None:
    """Standard output carries one thing: the audio (``-o -``), the words (``--words -``),
    the captions (``--captions -``) or the metrics (``--metrics -``); a second one is a
    usage error, before any work."""
    given = [
        (flag, what)
        for flag, what, on_stdout in (
            ("-o -", "the audio", f.output == STDOUT),
            ("--words -", "the words", f.word_outputs.printed),
            ("--captions -", "the captions", f.word_outputs.captions_printed),
            ("--metrics -", "the metrics", f.metrics == STDOUT),
        )
        if on_stdout
    ]
    if len(given) > 1:
        (first, what), (second, _) = given[0], given[1]
        raise click.UsageError(
            f"{second} does not go with {first} (standard output carries {what}):"
            f" write one of them to a file"
        )


def _check_words_flags(f: TtsFlags) -> None:
    asked = f.word_outputs
    if not asked.asked:
        return
    if f.captions_file is not None and asked.caption_format() is None:
        raise click.BadParameter(
            f"{f.captions_file}: captions are .srt or .vtt files (or srt or vtt, beside the audio)",
            param_hint="--captions",
        )
    if asked.beside and f.output == STDOUT:
        raise click.UsageError(
            "--words or --captions with no FILE go beside the audio file, and -o - writes"
            " none: name their files"
        )
    if f.input_file is not None and (asked.printed or asked.captions_printed or asked.named()):
        raise click.UsageError(
            "--input-file writes each line's words beside its audio: give --words and"
            " --captions no FILE (or a format: --captions srt)"
        )
    if asked.beside and f.input_file is None and f.output is None and (f.play or f.follow):
        raise click.UsageError(
            "--words or --captions with no FILE go beside the audio file: give -o FILE,"
            " or name their files"
        )


def _check_batch_flags(f: TtsFlags) -> None:
    if f.input_file is None:
        if f.output_dir is not None:
            raise click.UsageError("--output-dir goes with --input-file")
        if f.jobs is not None or f.ray is not None or f.streams is not None:
            raise click.UsageError("--jobs, --ray and --streams go with --input-file")
        if f.accept_refused:
            raise click.UsageError("--accept-refused goes with --input-file")
        return
    if f.output_dir is None:
        raise click.UsageError("--input-file needs --output-dir")
    if f.output is not None:
        raise click.UsageError("--input-file writes one WAV per line to --output-dir: drop -o")
    if f.metrics is not None:
        raise click.UsageError("--metrics reports one utterance: drop it with --input-file")
    if f.text_given:
        raise click.UsageError("--input-file reads the text from a file: drop TEXT/--text")


def check_paths(
    f: TtsFlags, live_output: str | None, output: str, model: ModelFlags | None = None
) -> None:
    """Every path the run reads or writes, before any download, build or synthesis."""
    checks.readable_file(f.voice_file, "voice file")
    if f.clone_voice is None:  # else the voice file is ignored
        checks.voice_file(f.voice_file, f.voice)
    checks.recording(f.clone_voice)
    checks.readable_file(f.input_file, "input file")
    checks.writable_file(f.save_voice, "--save-voice file")
    checks.writable_file(f.metrics, "metrics file", create_folders=True)  # as FluidAudio
    checks.writable_dir(f.output_dir, "output folder")
    if f.word_outputs.printed:  # --words -: a closed standard output is refused as -o - is
        checks.writable_file(STDOUT, "words")
    if f.word_outputs.captions_printed:
        checks.writable_file(STDOUT, "captions")
    written = None if f.input_file is not None else (output if live_output is None else live_output)
    files = _word_files(f, written)
    for kind, path in files.items():
        checks.writable_file(path, f"--{kind} file")
    if written is not None:
        checks.writable_file(written, "output file")
    clash = checks.first_clash(
        [("-o", written), ("--metrics", f.metrics), ("--save-voice", f.save_voice),
         ("--words", files.get("words")), ("--captions", files.get("captions"))],
        [("--voice-file", f.voice_file), ("--clone-voice", f.clone_voice),
         ("--input-file", f.input_file), *checks.model_inputs(model)],
    )  # fmt: skip
    if clash is not None:
        raise click.UsageError(clash)


def speak_options(f: TtsFlags) -> SpeakOptions:
    """The options of the flags; a refused value raises OptionsError, which main
    turns into a usage error naming the flag (``cli.flags.flag_for``)."""
    from pocketcli.options import SpeakOptions

    return SpeakOptions().with_(
        temperature=f.temperature,
        seed=f.seed,
        max_tokens=f.max_tokens,
        eos_threshold=f.eos_threshold,
        frames_after_eos=f.frames_after_eos,
        normalize=not f.no_normalize,
        ssml=f.ssml,
        output_chain=not f.no_deess,
        peak_normalize=True,  # FluidAudio's WAV writer peak-normalises, --no-deess or not
        noise_clamp=f.noise_clamp,
        words=f.word_outputs.asked,
        speed=f.speed,
    )


def check_output(output: str, audio_format: str | None, force: bool, batch: bool = False):
    """The output format, and no binary audio on a terminal unless forced."""
    from pocketcli.audio.output import AudioError, format_for

    if batch:
        if audio_format is not None and audio_format.lower() != "wav":
            raise click.UsageError("--input-file writes one WAV per line: drop --format")
        return None
    try:
        fmt = format_for(None, audio_format) if audio_format is not None else None
    except AudioError as exc:
        raise click.BadParameter(str(exc), param_hint="--format") from None
    if fmt is None:
        try:
            fmt = format_for(None if output == STDOUT else output)
        except AudioError as exc:
            raise click.BadParameter(str(exc), param_hint="-o/--output") from None
    if output == STDOUT and not force and sys.stdout.isatty():
        raise click.UsageError(
            "not writing binary audio to a terminal: redirect it (-o - | aplay) or add --force"
        )
    return fmt


def _read_text(f: TtsFlags) -> str | None:
    if f.input_file is not None:
        return None
    return read_text(f.text_arg if f.text_arg is not None else f.text)


def warn(message: str) -> None:
    """A warning (what was cut, clipped or ignored): one line, printed with -q too, since
    -q hides the summary and the notes, not what changed the result."""
    sys.stderr.write(f"pockettts: warning: {message}\n")


def _voice_precedence(f: TtsFlags, say) -> None:
    """FluidAudio's order: --clone-voice, then --voice-file, then --voice; one line
    says which of several wins, so nothing is ignored silently."""
    voice = f.voice
    if f.clone_voice is None and names_voices_inside(f.voice_file):
        voice = None  # -v picks a voice inside the file: nothing is ignored
    given = [
        flag
        for flag, value in (
            ("--clone-voice", f.clone_voice),
            ("--voice-file", f.voice_file),
            ("--voice", voice),
        )
        if value is not None
    ]
    if len(given) > 1:
        ignored = " and ".join(given[1:])
        say(f"{given[0]} wins over {ignored} (FluidAudio's order); {ignored} ignored")


def _choose(tts: PocketTTS, f: TtsFlags) -> ChosenVoice:
    chosen = choose_voice(tts, f.voice, f.voice_file, f.clone_voice, f.save_voice, on_warning=warn)
    if chosen.state is None and not f.quiet:
        notice(
            "this model has no built-in voice: speaking without a voice prompt"
            " (give one with --voice-file or --clone-voice)"
        )
    return chosen


def run_batch_mode(f: TtsFlags, choice: ModelRequest, options: SpeakOptions) -> int:
    """``--input-file``: one WAV per line; returns the exit status."""
    from pocketcli.cli.batch_command import VoiceFlags, run_batch_command

    assert f.input_file is not None and f.output_dir is not None
    return run_batch_command(
        choice,
        _read_batch_input(f.input_file),
        f.output_dir,
        options,
        VoiceFlags(f.voice, f.voice_file, f.clone_voice, f.save_voice),
        jobs=f.jobs,
        ray=f.ray,
        streams=f.streams,
        overwrite=f.overwrite,
        accept_refused=f.accept_refused,
        quiet=f.quiet,
        on_warning=warn,
        beside=_beside(f.word_outputs),
    )


def _beside(asked: WordOutputs) -> tuple[str, ...]:
    """The formats of what a batch writes beside each line's WAV."""
    kinds = ("json",) if asked.words is not None else ()
    fmt = asked.caption_format()
    return kinds + ((fmt,) if fmt is not None else ())


def _read_batch_input(input_file: Path) -> bytes:
    return read_input_file(input_file)  # bounded; endless, binary or writerless refused


def run_live_mode(
    f: TtsFlags,
    live: LiveRequest,
    tts: PocketTTS,
    chosen: ChosenVoice,
    options: SpeakOptions,
    words: str | None,
    timing: Timing,
    fmt: OutputFormat | None,
) -> None:
    """``--play`` / ``--follow``: speech while it is generated (``cli/live.py``)."""
    from pocketcli.cli.live import run_live

    run_live(
        live,
        tts,
        chosen.state,
        options,
        words=words,
        quiet=f.quiet,
        on_warning=warn,
        timing=timing,
        fmt=fmt,
        word_outputs=f.word_outputs,
    )


def speak_once(
    tts: PocketTTS,
    words: str,
    voice: Any,
    output: str,
    options: SpeakOptions,
    timing: Timing,
    fmt: OutputFormat | None,
    on_warning,
    word_outputs: WordOutputs | None = None,
) -> None:
    """One text to a file (the library's ``synthesize_to_file``) or to stdout; with
    ``word_outputs`` (--words, --captions) the timed words too."""
    t0 = time.perf_counter()  # bad text (markup, nothing to say): a usage error
    asked = word_outputs or WordOutputs()
    if output == STDOUT:
        timed: list | None = [] if options.words else None
        samples = _stream_to_stdout(tts, words, voice, options, on_warning, fmt, timed)
        timing.audio = samples / tts.sample_rate
        if timed is not None:  # -o - --words FILE: the files after the audio, each whole
            from pocketcli.words.captions import write_word_files

            write_word_files(timed, asked.named())
    elif options.words:
        timing.audio = _speak_with_words(
            tts, words, voice, Path(output), options, fmt, on_warning, asked
        )
    else:
        path = Path(output)  # its folder exists: checked first (a typo creates no tree)
        timing.audio = tts.synthesize_to_file(
            words, path, voice, options, format=fmt, on_warning=on_warning
        )
    timing.synthesis = time.perf_counter() - t0


def _word_files(f: TtsFlags, audio: str | None) -> dict[str, Path]:
    """Where --words ("words") and --captions ("captions") go beside the audio file
    ``audio`` (None or "-": none) or where they name."""
    beside = None if audio is None or audio == STDOUT else Path(audio)
    if f.input_file is not None:
        return {}  # beside each line's audio: the batch writes them
    return f.word_outputs.files(beside)


def _speak_with_words(
    tts, text: str, voice, path: Path, options, fmt, on_warning, asked: WordOutputs
) -> float:
    """``synthesize_to_file`` that also keeps the words (``--words -``: printed as they
    are decided), then writes --words and --captions (each whole or not at all, after
    the audio)."""
    from pocketcli.words.captions import print_captions, print_words, write_word_files
    from pocketcli.words.files import speak_to_file

    def printed(words) -> None:
        _printed(print_words, words)

    seconds, timed = speak_to_file(
        tts,
        text,
        path,
        voice,
        options,
        fmt,
        on_warning=on_warning,
        on_words=printed if asked.printed else None,
    )
    write_word_files(timed, asked.files(path))
    if asked.captions_printed:
        _printed(print_captions, timed)
    return seconds


def _printed(printer, words) -> None:
    """``--words -`` (words on stdout as they are decided) and ``--captions -`` (the
    captions, whole, at the end); a reader gone ends the run."""
    try:
        printer(words, sys.stdout)
    except OSError as exc:
        raise stdout_failure(exc) from None


def _stream_to_stdout(
    tts: PocketTTS, words: str, voice, options, on_warning, fmt, timed: list | None = None
) -> int:
    """Frames go out as they are made; causal filters only (no peak normalising); each
    frame's timed words are kept in ``timed`` (when given: ``options.words``).

    A reader that goes away (``| head``) ends the run quietly, as Unix tools do.
    """
    from pocketcli.audio.output import AudioEncoder, check_finite

    samples = 0
    try:
        stream = AudioEncoder(sys.stdout.buffer, fmt, tts.sample_rate, flush=True)
        for frame in tts.stream(words, voice, options, on_warning=on_warning):
            check_finite(frame.audio)
            stream.write(frame.audio)
            samples += frame.audio.size
            if timed is not None:
                timed.extend(frame.words)
        stream.close()
    except OSError as exc:  # a reader gone (141, quiet) or a full device (one line)
        raise stdout_failure(exc) from None
    return samples


def _summary(timing: Timing, total: float, output: str) -> None:
    rtfx = timing.audio / timing.synthesis if timing.synthesis > 0 else 0.0
    where = "stdout" if output == STDOUT else str(Path(output).resolve())
    sys.stderr.write(
        f"load {timing.load:.3f} s, synthesis {timing.synthesis:.3f} s, "
        f"audio {timing.audio:.3f} s, RTFx {rtfx:.2f}x, total {total:.3f} s -> {where}\n"
    )


def write_metrics(
    path: str, words: str, voice_name: str, output: str, timing: Timing, total: float
) -> None:
    """The run's timings as JSON (FluidAudio's keys) into ``path``, whole or not at all,
    or (``-``) on standard output."""
    from pocketcli.atomic import atomic_path

    report = {
        "backend": "pockettts",
        "text": words,
        "voice": voice_name,
        "output": output if output == STDOUT else str(Path(output).resolve()),
        "model_load_time_s": round(timing.load, 6),
        "inference_time_s": round(timing.synthesis, 6),
        "audio_duration_s": round(timing.audio, 6),
        "realtime_speed": round(timing.audio / timing.synthesis, 6) if timing.synthesis else 0.0,
        "total_time_s": round(total, 6),
    }
    body = json.dumps(report, indent=2, ensure_ascii=False) + "\n"
    if path == STDOUT:
        try:
            sys.stdout.write(body)
            sys.stdout.flush()
        except OSError as exc:  # a reader gone (141, quiet) or a full device (one line)
            raise stdout_failure(exc) from None
        return
    target = Path(path)
    if target.parent != Path(""):
        target.parent.mkdir(parents=True, exist_ok=True)  # as FluidAudio does
    with atomic_path(target) as tmp:
        tmp.write_text(body, encoding="utf-8")
