"""User-facing errors: one root, one module, one translator, and words the caller used.

- every error class the package defines for users is in ``pocketcli/errors.py`` and
  derives from ``PocketTTSError`` (the modules that raise one re-export it);
- the CLI says each by its exit status (usage 2, runtime 1) and by flags, the server
  by OpenAI's error shape with the field as ``param``: from the error, not its class;
- no message outside ``pocketcli/cli/`` names a command-line flag (a Python caller
  never typed one): the library names fields, and the CLI maps them in one place.
"""

from __future__ import annotations

import ast
import importlib
import re

import pytest

from pocketcli import errors
from tests.support.cli import run
from tests.support.paths import PACKAGE, TINY

PACK = TINY / "pack"
VOICE = ("--voice-file", str(TINY / "voice.safetensors"))

# Exceptions that never reach a user as such: each front end turns them into an API
# error, a protocol frame or a retry where it raises them (or a signal's exit).
INTERNAL = {
    "interrupts.py": {"Terminated"},
    "cli/stdio.py": {"StandardOutputGone"},  # a reader gone: a quiet exit 141, no message
    "session.py": {"_Cancelled"},
    "store/hubclient.py": {"HubTooSlow", "HubUnreachable"},
    "serve/apierrors.py": {"ApiError"},
    "frontends/admission.py": {"Busy", "ShuttingDown", "Cancelled"},
    "serve/streaming.py": {"_Aborted"},
    "frontends/turns.py": {"TurnError"},
    "frontends/voices.py": {"VoiceNotFound", "VoiceUnreadable"},
    "serve/routes/ws.py": {"_Closing", "_Refused"},
    "wyoming/handler.py": {"BadEvent"},
    "mcp/speaker.py": {"QueueFull"},
}
_BUILTIN_ERRORS = {n for n in dir(__import__("builtins")) if n.endswith(("Error", "Exception"))}


def _sources() -> list[tuple[str, ast.Module]]:
    return [
        (path.relative_to(PACKAGE).as_posix(), ast.parse(path.read_text(encoding="utf-8")))
        for path in sorted(PACKAGE.rglob("*.py"))
    ]


def _base_names(node: ast.ClassDef) -> set[str]:
    return {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases}


def test_every_user_error_is_defined_in_errors_py_under_one_root() -> None:
    ours = set(errors.__all__)
    exceptions = ours | _BUILTIN_ERRORS | {"BaseException"}
    strays = []
    for name, tree in _sources():
        if name == "errors.py":
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef) or not _base_names(node) & exceptions:
                continue
            if node.name not in INTERNAL.get(name, set()):
                strays.append(f"{name}: class {node.name}")
    assert not strays, f"define user-facing errors in pocketcli/errors.py: {strays}"
    for name in ours:
        assert issubclass(getattr(errors, name), errors.PocketTTSError), name
    assert errors.UserError is errors.PocketTTSError


@pytest.mark.parametrize(
    "module, name",
    [
        ("pocketcli.voices.state", "VoiceError"),
        ("pocketcli.packs.manifest", "PackError"),
        ("pocketcli.store.errors", "OfflineMiss"),
        ("pocketcli.normalize", "MarkupError"),
        ("pocketcli.text", "EmptyTextError"),
        ("pocketcli.options", "OptionsError"),
        ("pocketcli.session", "SessionClosed"),
        ("pocketcli.runtimes.base", "RuntimeError_"),
        ("pocketcli.audio.output", "AudioError"),
    ],
)
def test_old_homes_still_name_the_same_classes(module: str, name: str) -> None:
    """Code that caught an error by its old module keeps catching it."""
    cls = getattr(importlib.import_module(module), name)
    assert cls.__module__ == "pocketcli.errors" and issubclass(cls, errors.PocketTTSError)


def test_the_error_says_its_exit_status_and_the_cli_says_fields_as_flags() -> None:
    from pocketcli.cli.flags import in_flags

    conflict = errors.OptionConflict(
        "{config} and {language} both name the model", "config", "language"
    )
    hint = errors.FieldHint("{ray} needs Ray", "ray")
    unknown = errors.UnknownNameError("corpus", "x", ("a",), "(or {corpus_path})", ("corpus_path",))
    assert (conflict.exit_code, hint.exit_code, errors.VoiceError("v").exit_code) == (2, 1, 1)
    assert errors.MarkupError("bad", 1, 2).exit_code == errors.EmptyTextError().exit_code == 2
    assert str(conflict) == "config and language both name the model"
    assert in_flags(conflict) == "--config and --language both name the model"
    assert in_flags(hint) == "--ray needs Ray"
    assert str(unknown) == "unknown corpus 'x' (or corpus_path); choose from: a"
    assert in_flags(unknown) == "unknown corpus 'x' (or --corpus-path); choose from: a"


def test_cli_translates_library_errors_by_their_exit_status(tmp_path) -> None:
    usage = run(
        "tts", "Hi.", "--config", "x.yaml", "--language", "english", "-o", "o.wav", text=True
    )
    assert usage.returncode == 2, usage.stderr
    assert usage.stderr.splitlines() == [
        "pockettts: error: --config and --language both name the model: give one",
        "pockettts: hint: 'pockettts tts --help' lists the options and values",
    ]
    out = tmp_path / "o.wav"
    markup = run("tts", "a [pause:soon] b", "--model-dir", str(PACK), *VOICE, "-o", out, text=True)
    assert markup.returncode == 2 and markup.stderr.count("\n") == 2, markup.stderr
    assert "line 1, column 3" in markup.stderr and "Traceback" not in markup.stderr
    assert not out.exists()


def test_server_translates_library_errors_to_openai_shape() -> None:
    from pocketcli.serve.apierrors import as_api_error

    field = as_api_error(errors.OptionsError("temperature", "must be from 0 to 10"), "option")
    assert (field.status, field.code, field.param) == (400, "invalid_option", "temperature")
    assert field.message == "temperature must be from 0 to 10"
    other = as_api_error(errors.VoiceError("/srv/voices/a.bin is not a voice file"), "voice")
    assert (other.status, other.code, other.param) == (400, "invalid_voice", None)
    assert "/srv/" not in other.message  # no path of the server's


# --- library messages never name a flag -------------------------------------------------

FLAG = re.compile(r"(?<![\w-])(--[a-z][\w-]*|-[a-zA-Z])(?![\w-])")
# A command to run (`pockettts download --language x`, pip install ...) names its own
# flags: it is taken out first. So do argv rewriting and pocket-tts's label.
COMMAND = re.compile(r"`[^`]*`|(?:pockettts \w|pip install |python -m )[^;)'`]*")
ALLOWED = {
    ("batch/argv.py", "--ray"),  # rewrites the command line before click reads it
    ("interrupts.py", "--multiprocessing-fork"),  # multiprocessing's own marker in argv
    ("bench/reference.py", "--quantize"),  # the label of pocket-tts's run, by its own flag
    ("normalize/languages/french.py", "-C"),  # "av. J.-C.", an abbreviation
}


def _strings(tree: ast.Module):
    """Each string of the code (an f-string whole, its holes as {}), not docstrings."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = body[0] if body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                skip.add(id(first.value))
        if isinstance(node, ast.JoinedStr):
            skip.update(id(v) for v in node.values)
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.JoinedStr):
            parts = (v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
            yield node.lineno, "".join(parts)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.lineno, node.value


def test_no_library_message_names_a_command_line_flag() -> None:
    found = []
    for name, tree in _sources():
        if name.startswith("cli/"):
            continue
        for line, text in _strings(tree):
            for flag in FLAG.findall(COMMAND.sub("", text)):
                if (name, flag) not in ALLOWED:
                    found.append(f"{name}:{line}: {flag} in {text[:80]!r}")
    assert not found, "name the field ({field}), not the flag:\n" + "\n".join(found)
