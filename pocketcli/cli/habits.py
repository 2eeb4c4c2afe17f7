"""Flags people bring from Kyutai's ``pocket-tts generate`` and from piper, said our way.

Each habit either means one of our flags (and is translated, silently, as an
alias would be) or is refused with a usage error naming the flag to use.
Aliases that are only other names (``--output-path``, ``--output_file``,
``serve --default-voice``) are declared on the option itself.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from pocketcli.cli import clickcompat as click
from pocketcli.cli.model_options import ModelFlags
from pocketcli.cli.speak import STDOUT, TtsFlags

# Other tools' commands for speaking, and ours: Kyutai's ``pocket-tts generate``.
OTHER_COMMANDS = {"generate": "tts"}
QUANTIZED = "int8"  # what Kyutai's --quantize gives (int8 weights)
RAW_FORMAT = "s16le"  # piper's --output-raw: 16-bit PCM on stdout
VOICE_FILE_SUFFIXES = (".safetensors", ".bin", ".npy")


def translate_habits(f: TtsFlags, model: ModelFlags) -> tuple[TtsFlags, ModelFlags]:
    """``f`` and ``model`` with Kyutai's and piper's habits turned into our flags."""
    if f.quantize:
        if model.precision not in (None, QUANTIZED):
            raise click.UsageError(f"--quantize means --precision {QUANTIZED}: drop one")
        model = replace(model, precision=QUANTIZED)
    if f.piper_model is not None:
        model = replace(model, model_dir=_piper_model(f.piper_model, model))
    if f.output_raw:
        if f.output not in (None, STDOUT) or f.audio_format not in (None, RAW_FORMAT):
            raise click.UsageError(f"--output-raw means -o - --format {RAW_FORMAT}: drop one")
        f = replace(f, output=STDOUT, audio_format=RAW_FORMAT)
    if f.voice is not None and f.voice_file is None and f.clone_voice is None:
        f = _voice_as_file(f)
    return f, model


def _piper_model(value: str, model: ModelFlags) -> Path:
    """piper's ``-m``: a pack folder is our ``--model-dir``; anything else is refused."""
    if model.model_dir is not None:
        raise click.UsageError("-m and --model-dir both name the model: keep --model-dir")
    path = Path(value)
    if path.is_dir():
        return path
    raise click.UsageError(
        f"-m {value}: piper's model flag; pockettts takes a pack folder with --model-dir"
        " or a language's model with --language"
    )


def _voice_as_file(f: TtsFlags) -> TtsFlags:
    """Kyutai's ``--voice FILE``: a recording is cloned (our ``--clone-voice``), a
    voice-state file is read (our ``--voice-file``); a name stays a name."""
    value = f.voice or ""
    path = Path(value)
    if not (path.suffix or "/" in value or "\\" in value) or not path.is_file():
        return f  # a name (a file named "alba" in this folder does not make it a path)
    if path.suffix.lower() in VOICE_FILE_SUFFIXES:
        return replace(f, voice=None, voice_file=path)
    return replace(f, voice=None, clone_voice=path)
