"""``pockettts benchmark`` and ``pockettts corpus``: FluidAudio's TTS benchmark, and more."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import typer

from pocketcli import defaults
from pocketcli.bench import ASR_BACKENDS
from pocketcli.cli import checks, flags
from pocketcli.cli import clickcompat as click
from pocketcli.cli.model_options import (
    MODEL,
    ModelFlags,
    check_voice_name,
    choose_voice,
    load_model,
    takes_model_flags,
)

HELP = """Measure speed, latency, memory and intelligibility on a phrase corpus.

Examples:

  pockettts benchmark --limit 20

  pockettts benchmark --model-dir ./pack --precision int8 --output-json bench.json

  pockettts benchmark --model-dir ./pack --compare-reference --skip-asr

  pockettts benchmark --corpus-path my-lines.txt --audio-dir wavs/
"""

CORPUS_HELP = """Fetch MiniMax test-set phrase lists for other languages.

Examples:

  pockettts corpus --languages french,german

  pockettts corpus --languages all
"""

FIGURES = [
    ("cold_start_s", "cold start", "s", False),
    ("first_synth_ms", "first synthesis", "ms", False),
    ("ttft_ms_p50", "time to first audio p50", "ms", False),
    ("ttft_ms_p95", "time to first audio p95", "ms", False),
    ("session_first_frame_ms_p50", "session: enqueue to first frame p50", "ms", False),
    ("session_first_frame_ms_p95", "session: enqueue to first frame p95", "ms", False),
    ("synth_ms_p50", "synthesis p50", "ms", False),
    ("synth_ms_p95", "synthesis p95", "ms", False),
    ("agg_rtfx", "aggregate RTFx", "x", True),
    ("peak_rss_mb", "peak RSS", "MB", False),
]


def _ratios(ours: dict, ref: dict) -> dict[str, float]:
    """How many times better we are on each figure (>1 = pockettts ahead)."""
    out = {}
    for key, _, _, higher_better in FIGURES:
        a, b = ours.get(key), ref.get(key)
        if a and b:
            out[key] = (a / b) if higher_better else (b / a)
    return out


def _print_table(report, ratios: dict | None) -> None:
    from rich.console import Console
    from rich.table import Table

    s = report.summary.__dict__
    table = Table(title="pockettts benchmark", show_lines=False)
    table.add_column("figure")
    table.add_column("pockettts", justify="right")
    if report.reference:
        table.add_column(report.reference.get("label", "reference"), justify="right")
        table.add_column("ratio", justify="right")
    for key, label, unit, _ in FIGURES:
        row = [label, f"{s[key]:.2f} {unit}" if s[key] is not None else "-"]
        if report.reference:
            ref = report.reference.get(key)
            row += [
                f"{ref:.2f} {unit}" if ref is not None else "-",
                f"x{ratios[key]:.2f}" if ratios and key in ratios else "-",
            ]
        table.add_row(*row)
    for stage, ms in report.stages_ms.items():
        table.add_row(f"{stage} per call", f"{ms:.2f} ms", *([""] * 2 if report.reference else []))
    table.add_row(
        "phrases / frames / chunks",
        f"{s['phrases']} / {s['frames']} / {s['chunks']}",
        *([""] * 2 if report.reference else []),
    )
    if s["wer_macro"] is not None:
        table.add_row(
            f"WER / CER ({report.asr_backend})",
            f"{100 * s['wer_macro']:.1f}% / {100 * s['cer_macro']:.1f}%",
            *([""] * 2 if report.reference else []),
        )
    Console().print(table)  # the result: on stdout, where a script can take it


@takes_model_flags()
def benchmark_command(
    corpus: str = typer.Option(
        defaults.CORPUS,
        "--corpus",
        metavar="NAME",
        callback=flags.lower,
        help="minimax-<language>.",
    ),
    corpus_path: Path | None = typer.Option(
        None, "--corpus-path", metavar="FILE", help="Phrase file (# comments)."
    ),
    voice: str | None = flags.voice(),
    voice_file: Path | None = flags.voice_file(),
    model: ModelFlags = MODEL,
    output_json: Path | None = typer.Option(
        None, "--output-json", metavar="FILE", help="Write the report."
    ),
    audio_dir: Path | None = typer.Option(
        None, "--audio-dir", metavar="DIR", help="Keep phrase_NNN.wav."
    ),
    skip_asr: bool = typer.Option(False, "--skip-asr", help="No round-trip recognition."),
    asr_backend: str = typer.Option(
        defaults.ASR_BACKEND,
        "--asr-backend",
        metavar="NAME",
        callback=lambda v: v.lower(),
        autocompletion=lambda: list(ASR_BACKENDS),
        help=f"{', '.join(ASR_BACKENDS)}.",
    ),
    asr_model: str | None = typer.Option(
        None, "--asr-model", metavar="NAME", help="faster-whisper model."
    ),
    limit: int | None = typer.Option(
        None, "--limit", min=1, metavar="N", help="Only the first N phrases."
    ),
    temperature: float | None = flags.temperature(),
    compare_reference: bool = typer.Option(
        False, "--compare-reference", help="Also run Kyutai's pocket-tts on the same weights."
    ),
    quiet: bool = flags.quiet("No table on stdout, no progress on stderr."),
) -> None:
    from pocketcli.bench.asr import load_recognizer
    from pocketcli.bench.runner import run_benchmark
    from pocketcli.options import SpeakOptions

    if asr_backend not in ASR_BACKENDS:
        raise click.BadParameter(
            f"{asr_backend!r}; choose from {', '.join(ASR_BACKENDS)}", param_hint="--asr-backend"
        )
    if compare_reference and model.model_dir is None:
        raise click.UsageError("--compare-reference needs --model-dir (a locally built pack)")
    options = SpeakOptions(temperature=temperature, output_chain=False)  # main names the flag
    checks.readable_file(corpus_path, "corpus file")
    checks.voice_file(voice_file, voice)
    checks.writable_file(output_json, "--output-json file")
    checks.writable_dir(audio_dir, "--audio-dir folder")
    clash = checks.first_clash(
        [("--output-json", output_json)],
        [("--voice-file", voice_file), ("--corpus-path", corpus_path), *checks.model_inputs(model)],
    )
    if clash is not None:
        raise click.UsageError(clash)
    choice = model.request(quiet=quiet)
    if voice_file is None:  # with --voice-file, -v names a voice inside the file
        check_voice_name(choice, voice)
    phrases = _phrases(corpus, corpus_path, limit)
    language_name = choice.model_language
    recognizer = None if skip_asr else load_recognizer(asr_backend, language_name, asr_model)
    voice_path: list[Path | None] = [voice_file]
    threads: list[int | None] = [None]

    def load():
        tts = load_model(choice, quiet=quiet)
        chosen = choose_voice(tts, voice, voice_file)
        voice_path[0] = chosen.path
        threads[0] = getattr(tts.runtime, "threads", None)
        return tts, chosen.state

    reference = None
    if compare_reference:
        from pocketcli.bench.reference import ReferenceSide

        pack = choice.model_dir
        assert pack is not None

        def reference() -> ReferenceSide:  # started once ours is loaded (its voice is known)
            return ReferenceSide(
                pack,
                voice=voice_path[0],
                temperature=temperature,
                quantize=choice.precision == "int8",
            )

    report = run_benchmark(
        load,
        phrases,
        options=options,
        audio_dir=audio_dir,
        recognizer=recognizer,
        progress=None if quiet else _progress,
        reference=reference,
    )
    settings = {
        "corpus": str(corpus_path) if corpus_path else corpus,
        "language": choice.language,
        "placement": choice.placement,
        "compute_units": choice.compute_units,
        "model_dir": str(choice.model_dir) if choice.model_dir else None,
        "runtime": choice.runtime,
        "precision": choice.precision,
        "voice": str(voice_path[0]) if voice_path[0] else None,
        "temperature": temperature,
        "threads": threads[0],  # our sessions' intra-op threads (None: not ONNX Runtime)
        "cpu_count": os.cpu_count(),
        "reference_text": "ours after normalisation" if compare_reference else None,
        "order": "alternating, phrase by phrase" if compare_reference else None,
    }
    _report(report, settings, output_json, quiet)


def _phrases(corpus: str, corpus_path: Path | None, limit: int | None) -> list:
    from pocketcli.bench.corpus import load_corpus

    phrases = load_corpus(corpus, corpus_path)[:limit]  # an unknown name: a usage error
    if not phrases:
        raise click.UsageError("the corpus has no phrases")
    return phrases


def _progress(done: int, total: int) -> None:
    if sys.stderr.isatty():  # one line, redrawn
        sys.stderr.write(f"\r{done}/{total} phrases" + ("\n" if done == total else ""))
    else:  # a log or a pipe: plain lines
        sys.stderr.write(f"pockettts: {done}/{total} phrases\n")
    sys.stderr.flush()


def _report(report, settings: dict, output_json: Path | None, quiet: bool) -> None:
    """The report's settings and ratios, then the JSON file and the table on stdout."""
    report.settings = settings
    ratios = None
    if report.reference is not None:
        ratios = _ratios(report.summary.__dict__, report.reference)
        report.ratios = ratios
    if output_json is not None:
        from pocketcli.atomic import atomic_path

        with atomic_path(output_json) as tmp:
            tmp.write_text(
                json.dumps(report.to_json(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
            )
    if not quiet:
        _print_table(report, ratios)


def corpus_command(
    languages: str = typer.Option(
        ...,
        "--languages",
        "-l",
        metavar="LANGS",
        callback=flags.lower,
        help="Comma-separated MiniMax languages, or 'all'.",
    ),
    revision: str | None = typer.Option(
        None, "--revision", metavar="REV", help="Dataset revision."
    ),
    out_dir: Path | None = typer.Option(
        None, "--out-dir", metavar="DIR", help="Where to write <lang>.txt."
    ),
    offline: bool = typer.Option(False, "--offline", help="Only use the local HF cache."),
) -> None:
    from pocketcli.bench.corpus import MINIMAX_LANGUAGES
    from pocketcli.bench.fetch import fetch_minimax

    wanted = (
        list(MINIMAX_LANGUAGES)
        if languages == "all"
        else [x.strip() for x in languages.split(",") if x.strip()]
    )
    unknown = [x for x in wanted if x not in MINIMAX_LANGUAGES]
    if unknown or not wanted:
        raise click.BadParameter(
            f"{', '.join(unknown) or languages!r}; choose from "
            f"{', '.join(MINIMAX_LANGUAGES)} or all",
            param_hint="--languages",
        )
    for path in fetch_minimax(wanted, revision=revision, out_dir=out_dir, offline=offline):
        typer.echo(str(path))
