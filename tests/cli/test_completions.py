"""The committed completion scripts are current and complete the current CLI."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from pocketcli.cli.completion import SHELLS, completion_script
from pocketcli.cli.main import app
from tests.support.cli import run
from tests.support.paths import ROOT

COMPLETIONS = ROOT / "completions"
FILES = {"bash": "pockettts.bash", "zsh": "_pockettts", "fish": "pockettts.fish"}


@pytest.mark.parametrize("shell", SHELLS)
def test_committed_scripts_equal_the_generated_ones(shell) -> None:
    committed = (COMPLETIONS / FILES[shell]).read_text(encoding="utf-8")
    assert committed == completion_script(shell) + "\n", "run scripts/make_completions.py"


def _complete(words: str, cword: int) -> list[str]:
    env = dict(
        os.environ, _POCKETTTS_COMPLETE="complete_bash", COMP_WORDS=words, COMP_CWORD=str(cword)
    )
    r = run(env=env)
    assert r.returncode == 0, r.stderr
    return r.stdout.decode().split()


def _commands() -> dict:
    from typer.main import get_command

    return get_command(app).commands  # type: ignore[attr-defined]


def test_every_subcommand_completes() -> None:
    assert set(_complete("pockettts ", 1)) == set(_commands())


def test_every_tts_option_completes() -> None:
    params = [p for p in _commands()["tts"].params if not getattr(p, "hidden", False)]
    options = {o for p in params for o in p.opts if o.startswith("--")}
    assert options <= set(_complete("pockettts tts --", 2))


def test_values_complete() -> None:
    assert set(_complete("pockettts tts --runtime ", 3)) == {
        "auto",
        "onnx",
        "coreml",
        "kevinahm",
        "browser",
    }
    assert "no-ane" in _complete("pockettts tts --compute-units ", 3)


@pytest.mark.parametrize("command", ["tts", "clone", "benchmark", "download", "voices"])
def test_language_completes_from_the_catalogue_in_every_command(command) -> None:
    from pocketcli.store.catalog import known_languages

    assert set(_complete(f"pockettts {command} --language ", 3)) == set(known_languages("onnx"))
    assert set(_complete(f"pockettts {command} --language sp", 3)) == {"spanish", "spanish_24l"}


def test_bash_script_parses_and_registers(tmp_path) -> None:
    bash = shutil.which("bash")
    assert bash is not None
    check = subprocess.run(
        [bash, "-c", f"source {COMPLETIONS / FILES['bash']} && complete -p pockettts"],
        capture_output=True,
        timeout=30,
    )
    assert check.returncode == 0 and b"_pockettts_completion" in check.stdout


@pytest.mark.parametrize("shell, args", [("zsh", ["-n"]), ("fish", ["--no-execute"])])
def test_other_shells_parse_when_installed(shell, args) -> None:
    exe = shutil.which(shell)
    if exe is None:
        pytest.skip(f"{shell} is not installed here")
    r = subprocess.run(
        [exe, *args, str(COMPLETIONS / FILES[shell])], capture_output=True, timeout=30
    )
    assert r.returncode == 0, r.stderr


# Values from a fixed set complete like --runtime's (a user's sweep, fourth session: these
# completed nothing, so `pockettts completion <TAB>` offered no shell).
FIXED_VALUES = {
    "pockettts completion ": {"bash", "zsh", "fish"},
    "pockettts completion z": {"zsh"},
    "pockettts export --format ": {"kevinahm-v2", "web"},
    "pockettts serve --log-level ": {"debug", "info", "warning", "error"},
    "pockettts wyoming --log-level w": {"warning"},
    "pockettts mcp --log-level ": {"debug", "info", "warning", "error"},
    "pockettts normalize --urls ": {"read", "drop"},
    "pockettts normalize --emails d": {"drop"},
    "pockettts tts --backend ": {"pocket", "pockettts"},
}


@pytest.mark.parametrize("words", list(FIXED_VALUES))
def test_fixed_values_complete(words) -> None:
    assert (
        set(_complete(words, len(words.split()) - (not words.endswith(" ")))) == FIXED_VALUES[words]
    )


def test_help_completes_the_commands() -> None:
    assert set(_complete("pockettts help ", 2)) == set(_commands()) - {"help"}
    assert set(_complete("pockettts help co", 2)) == {"completion", "corpus"}
