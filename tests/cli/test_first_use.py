"""The CLI as a new user meets it: problems found first, worded once, no surprises.

One test per stumble a new user met (a mistyped flag, a late check, a vague
message...). Runs needing a model that would
be downloaded use the stand-in Hub and assert that no request was made, so a
check that comes too late fails them.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from tests.cli.test_store_models import hub  # noqa: F401 - the stand-in Hub fixture
from tests.support import paths
from tests.support.cli import run
from tests.support.fakehub import subprocess_env

ROOT = paths.ROOT


def on_hub(fake, tmp_path, *args: str) -> subprocess.CompletedProcess:
    return run(*args, env=subprocess_env(fake, tmp_path))


def one_line(r: subprocess.CompletedProcess, code: int, fragment: bytes) -> None:
    assert r.returncode == code, r.stderr
    assert fragment in r.stderr, r.stderr
    assert b"Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == (2 if code == 2 else 1), r.stderr


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["tts", "Hi.", "--voice-file", "{missing}"], b"voice file not found: {missing}"),
        (["tts", "Hi.", "--clone-voice", "{missing}"], b"audio file not found: {missing}"),
        (["clone", "{missing}", "-o", "{tmp}/v.safetensors"], b"audio file not found"),
        (["tts", "--input-file", "{missing}", "--output-dir", "{tmp}/o"], b"input file not"),
        (["tts", "Hi.", "-o", "{tmp}"], b"output file is a folder, not a file: {tmp}"),
        (["tts", "Hi.", "-o", "{afile}/x.wav"], b"is a file, not a folder"),
        (["tts", "Hi.", "--metrics", "{afile}/m.json"], b"is a file, not a folder"),
        (["tts", "--input-file", "{lines}", "--output-dir", "{afile}"], b"output folder"),
        (["benchmark", "--voice-file", "{missing}", "--skip-asr"], b"voice file not found"),
    ],
)
def test_bad_paths_are_found_before_any_download(hub, tmp_path, args, fragment) -> None:  # noqa: F811
    (tmp_path / "a-file").write_text("not a folder")
    (tmp_path / "lines.txt").write_text("one line\n")
    names = {
        "missing": str(tmp_path / "missing.wav"),
        "tmp": str(tmp_path),
        "afile": str(tmp_path / "a-file"),
        "lines": str(tmp_path / "lines.txt"),
    }
    filled = [a.format(**names) for a in args]
    r = on_hub(hub, tmp_path, *filled, "--language", "english")
    one_line(r, 1, fragment.replace(b"{missing}", names["missing"].encode()).replace(
        b"{tmp}", names["tmp"].encode()))  # fmt: skip
    assert b".part" not in r.stderr and b".tmp" not in r.stderr
    assert hub.requests() == []


def test_metrics_in_a_missing_folder_is_created(pack_dir, tmp_path) -> None:
    metrics = tmp_path / "new" / "deeper" / "m.json"
    r = run("tts", "Hi.", "--model-dir", str(pack_dir), "--metrics", str(metrics), "-q",
            "-o", str(tmp_path / "x.wav"))  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert json.loads(metrics.read_text())["backend"] == "pockettts"


def test_voice_not_in_a_pack_without_language_gives_advice_that_works(pack_dir) -> None:
    r = run("tts", "Hi.", "-v", "lola", "--model-dir", str(pack_dir))
    one_line(r, 2, b"use --voice-file or --clone-voice")  # a usage error, as on every pack
    assert b"--language" not in r.stderr  # which --model-dir would then refuse


def test_batch_mode_refuses_flags_it_would_ignore(pack_dir, tmp_path) -> None:
    lines = tmp_path / "lines.txt"
    lines.write_text("a|one\n")
    base = ["tts", "--model-dir", str(pack_dir), "--input-file", str(lines), "--output-dir",
            str(tmp_path / "out")]  # fmt: skip
    one_line(run(*base, "-o", str(tmp_path / "x.wav")), 2, b"drop -o")
    one_line(run(*base, "--metrics", str(tmp_path / "m.json")), 2, b"--metrics")
    assert not (tmp_path / "out").exists()


def test_values_are_case_insensitive(pack_dir, tmp_path) -> None:
    out = tmp_path / "x.wav"
    r = run("tts", "Hi.", "--model-dir", str(pack_dir), "--precision", "INT8", "--runtime",
            "ONNX", "-q", "-o", str(out))  # fmt: skip
    assert r.returncode == 0, r.stderr
    r = run("tts", "Hi.", "--language", "SPANISH", "--offline", "-o", str(out))
    assert b"unknown" not in r.stderr.lower() and b"spanish" in r.stderr  # offline, not a typo


def test_voices_lists_a_local_packs_voices(pack_dir, voice_path, tmp_path) -> None:
    pack = tmp_path / "pack"
    shutil.copytree(pack_dir, pack)
    (pack / "voices").mkdir()
    shutil.copy(voice_path, pack / "voices" / "mine.safetensors")
    r = run("voices", "--model-dir", str(pack), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["voices"] == ["mine"]


def test_coreml_only_options_on_onnx_say_they_are_ignored(pack_dir, tmp_path) -> None:
    r = run("tts", "Hi.", "--model-dir", str(pack_dir), "--placement", "ane",
            "--compute-units", "NO-ANE", "-o", str(tmp_path / "x.wav"))  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert b"--placement has no effect with the onnx runtime" in r.stderr
    assert b"--compute-units has no effect with the onnx runtime" in r.stderr


def test_clone_voice_with_voice_file_says_which_wins(pack_dir, voice_path, tmp_path) -> None:
    wav = ROOT / "tests" / "fixtures" / "tiny" / "clone_prompt_24k.wav"
    r = run("tts", "Hi.", "--model-dir", str(pack_dir), "--clone-voice", str(wav),
            "--voice-file", str(voice_path), "-o", str(tmp_path / "x.wav"))  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert b"--clone-voice wins over --voice-file" in r.stderr


def test_help_keeps_examples_and_shows_no_type_noise() -> None:
    r = run("tts", "--help")
    assert r.returncode == 0
    assert b"[pause:1s]" in r.stdout and b"[pause]" in r.stdout
    assert b"<bool>" not in r.stdout
    assert b"0.3" in r.stdout and b"0.7" in r.stdout  # where the default differs, and why


def test_usage_errors_are_one_line_and_a_hint(pack_dir) -> None:
    r = run("tts", "Hi.", "--model-dir", str(pack_dir), "--language", "spanish")
    one_line(r, 2, b"--model-dir already names the model")
    assert r.stderr.splitlines()[1].startswith(b"pockettts: hint: ")


def test_benchmark_unknown_asr_backend_is_a_usage_error(pack_dir) -> None:
    r = run("benchmark", "--model-dir", str(pack_dir), "--asr-backend", "bad")
    one_line(r, 2, b"faster-whisper")


FLUIDAUDIO_SCRIPT_FLAGS = [
    "--backend", "pocket", "--auto-download", "--speed", "1.2", "--variant", "15s", "--cpu-only",
    "--lang", "en-us", "--temperature", "0.7", "--seed", "42", "--compute-units", "avoid-ane",
    "--placement", "gpu", "--voice", "af_heart",
]  # fmt: skip


def test_a_fluidaudio_script_runs_unchanged(pack_dir, voice_path, tmp_path) -> None:
    out = tmp_path / "fa.wav"
    r = run("tts", "--text", "Compatible.", *FLUIDAUDIO_SCRIPT_FLAGS, "--voice-file",
            str(voice_path), "-o", str(out), "--model-dir", str(pack_dir))  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert out.stat().st_size > 44
    notes = [line for line in r.stderr.splitlines() if line.startswith(b"pockettts: note:")]
    for flag in (b"--auto-download", b"--variant", b"--cpu-only", b"--lang"):
        assert sum(flag + b" has no effect" in n for n in notes) == 1, notes
    assert not any(b"--speed" in n for n in notes), notes  # FluidAudio's --speed now works


def test_every_fluidaudio_tts_flag_is_accepted() -> None:
    from typer.main import get_command

    from pocketcli.cli.fluid_compat import IGNORED
    from pocketcli.cli.main import app

    accepted = {o for p in get_command(app).commands["tts"].params for o in p.opts}  # type: ignore[attr-defined]
    theirs = {"--output", "-o", "--voice", "-v", "--metrics", "--backend", "--text", "--no-deess",
              "--clone-voice", "--voice-file", "--save-voice", "--compute-units", "--placement",
              "--language", "--temperature", "--seed", "--speed"}  # fmt: skip
    theirs |= {flag for flags in IGNORED for flag in flags}
    assert theirs - accepted == set()


def test_bench_process_reports_a_crashed_command_in_one_line(tmp_path) -> None:
    spec = importlib.util.spec_from_file_location(
        "bench_process", ROOT / "benchmarks" / "bench_process.py"
    )
    bench = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(bench)
    wav = tmp_path / "out.wav"
    writes_then_aborts = [sys.executable, "-c",
        f"import os; open({str(wav)!r}, 'wb').write(b'RIFF' + bytes(60)); os.abort()"]  # fmt: skip
    assert bench.wall_seconds(writes_then_aborts, wav) > 0  # counted, not a traceback
    with pytest.raises(SystemExit, match="wrote no audio"):
        bench.wall_seconds([sys.executable, "-c", "import os; os.abort()"], wav)


TYPE_NOISE = re.compile(rb"(-\S+|[A-Z]+) <(str|path|int|float|int range|float range|bool)>")


COMMANDS = ["tts", "normalize", "benchmark", "corpus", "download", "voices", "clone", "inspect",
            "completion", "serve"]  # fmt: skip


@pytest.mark.parametrize("command", COMMANDS)
def test_no_option_help_shows_a_python_type(command) -> None:
    r = run(command, "--help")
    assert r.returncode == 0, r.stderr
    options = r.stdout.split(b"Options:")[1]
    assert TYPE_NOISE.findall(options) == [], options.decode()


def test_normalize_language_completes_and_values_ignore_case() -> None:
    env = dict(os.environ, _POCKETTTS_COMPLETE="complete_bash", COMP_CWORD="3",
               COMP_WORDS="pockettts normalize --language ital")  # fmt: skip
    done = run(env=env)
    assert "italian" in done.stdout.decode().split(), done
    r = run("normalize", "See www.example.com now.", "--urls", "DROP", "--emails", "Read")
    assert r.returncode == 0, r.stderr
    assert b"example" not in r.stdout


@pytest.mark.parametrize(
    "args, shown",
    [
        (["tts", "Hi.", "-o", "a-file/x.wav"], "output file a-file/x.wav"),
        (["tts", "Hi.", "--metrics", "a-file/deeper/m.json"], "metrics file a-file/deeper/m.json"),
        (["clone", "in.wav", "-o", "a-file/v.safetensors"], "-o/--output a-file/v.safetensors"),
    ],
)
def test_an_output_under_a_file_names_the_path_as_typed(pack_dir, tmp_path, args, shown) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    shutil.copy(ROOT / "tests" / "fixtures" / "tiny" / "clone_prompt_24k.wav", tmp_path / "in.wav")
    r = run(*args, "--model-dir", str(pack_dir), cwd=tmp_path)
    one_line(r, 1, f"cannot write {shown}: ".encode())
    assert f"{tmp_path / 'a-file'} is a file, not a folder".encode() in r.stderr


@pytest.mark.parametrize(
    "args", [["tts", "Hi.", "--language"], ["download", "--precision"], ["voices", "--nope"]]
)
def test_the_hint_of_a_usage_error_names_the_subcommands_help(args) -> None:
    """'pockettts --help' does not list a subcommand's options: point at the one that does."""
    r = run(*args)
    assert r.returncode == 2, r.stderr
    assert r.stderr.splitlines()[1] == (
        f"pockettts: hint: 'pockettts {args[0]} --help' lists the options and values".encode()
    )


def test_voices_of_a_pack_built_for_a_language_are_its_languages_voices(pack_dir, pack_built_for):
    """-v lola works with a pack `pockettts download` built for spanish: voices lists it."""
    pack = pack_built_for("spanish")
    r = run("voices", "--model-dir", str(pack), "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert "lola" in report["voices"] and "alba" in report["voices"]
    assert report["language"] == "spanish"
    bare = run("voices", "--model-dir", str(pack_dir))
    assert bare.returncode == 0
    assert b"carries no voices: use --voice-file or --clone-voice" in bare.stderr


@pytest.mark.parametrize("command", ["normalize", "clone", "tts", "benchmark", "download"])
def test_help_shows_no_markup_escapes(command) -> None:
    """Help is printed as written: a rich escape (\\[) would be copied into a shell."""
    r = run(command, "--help")
    assert r.returncode == 0, r.stderr
    assert b"\\[" not in r.stdout, r.stdout.decode()
    assert b"[[" not in r.stdout.splitlines()[0]  # an optional argument is bracketed once


def test_the_other_commands_values_ignore_case_too(pack_dir, voice_path, tmp_path) -> None:
    r = run("completion", "BASH")
    assert r.returncode == 0 and b"complete" in r.stdout, r.stderr
    r = run("benchmark", "--corpus", "MiniMax-English", "--model-dir", str(pack_dir),
            "--voice-file", str(voice_path), "--limit", "1", "--skip-asr", "-q")  # fmt: skip
    assert r.returncode == 0, r.stderr
    r = run("corpus", "--languages", "Klingon,FRENCH", "--offline")
    one_line(r, 2, b"'klingon';")  # FRENCH is known: only the typo is named
    assert b"FRENCH" not in r.stderr
    r = run("benchmark", "--corpus", "minimax-klingon", "--model-dir", str(pack_dir))
    one_line(r, 2, b"minimax-klingon")  # an unknown value is a usage error


def test_a_voice_file_of_no_voice_format_is_found_before_any_download(hub, tmp_path) -> None:  # noqa: F811
    """Headers are cheap: a recording given as --voice-file (a common slip), or a
    voices.bin without -v, is said before the model is fetched and built."""
    from tests.support import tensorfiles

    wav = ROOT / "tests" / "fixtures" / "tiny" / "clone_prompt_24k.wav"
    many = tmp_path / "voices.bin"
    voices = {"a": np.zeros((2, 64), np.float32), "b": np.ones((3, 64), np.float32)}
    many.write_bytes(tensorfiles.voices_bin(voices))
    for args, fragment in (
        (["tts", "Hi.", "--voice-file", str(wav)], b"looks like an audio recording"),
        (["tts", "Hi.", "--voice-file", str(many)], b"holds 2 voices (a, b): choose one"),
        (["tts", "Hi.", "--voice-file", str(many), "-v", "c"], b"no voice 'c'"),
        (["benchmark", "--voice-file", str(wav), "--skip-asr"], b"looks like an audio"),
    ):
        one_line(on_hub(hub, tmp_path, *args, "--language", "english"), 1, fragment)
        assert hub.requests() == []


def test_a_voice_file_given_as_a_recording_is_found_before_any_download(hub, tmp_path) -> None:  # noqa: F811
    voice = ROOT / "tests" / "fixtures" / "tiny" / "voice.safetensors"
    for args in (["tts", "Hi.", "--clone-voice", str(voice)],
                 ["clone", str(voice), "-o", str(tmp_path / "v.safetensors")]):  # fmt: skip
        r = on_hub(hub, tmp_path, *args, "--language", "english")
        one_line(r, 1, b"not a recording; a voice file is used with --voice-file")
        assert hub.requests() == []
