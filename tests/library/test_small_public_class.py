"""A small public class (issue 31 item 7): ``PocketTTS`` has at most 12 public members,
voices live on one object, and every runtime (CoreML too) opens through ``open``."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from pocketcli import PocketTTS, SpeakOptions
from pocketcli.errors import UserError
from tests.support.paths import TINY

TINY_PACK, TINY_VOICE = TINY / "pack", TINY / "voice.safetensors"

MAX_PUBLIC = 12


def _public(names: object) -> set[str]:
    return {n for n in names if not n.startswith("_")}  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def tts() -> PocketTTS:
    return PocketTTS.open(model_dir=TINY_PACK)


def test_pockettts_has_at_most_twelve_public_members(tts: PocketTTS) -> None:
    # Methods and properties of the class, and attributes set on an opened model.
    members = _public(dir(PocketTTS)) | _public(vars(tts))
    assert len(members) <= MAX_PUBLIC, sorted(members)
    # The ways of speaking are all there, and the voices are one object.
    speaking = {"open", "stream", "synthesize", "synthesize_to_file", "synthesize_many"}
    assert speaking | {"asynthesize", "session", "voices", "sample_rate"} <= members


def test_the_removed_members_are_gone(tts: PocketTTS) -> None:
    gone = {"frames_for", "script_for", "noise_for", "settings_for", "stream_together"}
    gone |= {"load", "load_coreml", "from_request", "voice", "load_voice", "clone_voice"}
    assert not {n for n in gone if hasattr(tts, n)}


def test_voices_are_one_object_of_the_model(tts: PocketTTS) -> None:
    voices = tts.voices
    assert voices.default_name is None and voices.default() is None  # a bare pack: no voice
    by_file = voices.get(TINY_VOICE)
    for other in (voices.get(str(TINY_VOICE)), voices.load(TINY_VOICE)):
        assert all(np.array_equal(a, b) for a, b in zip(other.keys, by_file.keys, strict=True))
    assert isinstance(voices.cloning_available, bool)


def test_coreml_opens_through_the_registry_like_every_runtime() -> None:
    # Not a Mac with Core ML: the registry says so before anything is read.
    with pytest.raises(UserError, match="(?i)core ?ml"):
        PocketTTS.open(model_dir=TINY_PACK, runtime="coreml")


def _with_path(keywords: dict, where: str, folder: Path) -> dict:
    return keywords | {"path": folder / "never.wav"} if where == "to_file" else keywords


@pytest.mark.parametrize(
    ("speak", "where"),
    [
        (lambda tts, kw: tts.synthesize("Hi.", None, **kw), "synthesize"),
        (lambda tts, kw: tts.stream("Hi.", None, **kw), "stream"),
        (lambda tts, kw: tts.session(None, **kw), "session"),
        (lambda tts, kw: tts.synthesize_to_file("Hi.", kw.pop("path"), None, **kw), "to_file"),
        (lambda tts, kw: tts.synthesize_many(["Hi."], None, **kw), "synthesize_many"),
        (lambda tts, kw: asyncio.run(tts.asynthesize("Hi.", None, **kw)), "asynthesize"),
    ],
)
def test_options_arrive_only_as_speak_options(tts: PocketTTS, speak, where, tmp_path) -> None:
    """A keyword override (``seed=1``) is refused by Python itself, before anything is
    spoken or written: options reach a method only as a ``SpeakOptions``."""
    with pytest.raises(TypeError, match="unexpected keyword argument 'seed'"):
        speak(tts, _with_path({"seed": 1}, where, tmp_path))
    with pytest.raises(TypeError, match="SpeakOptions"):  # a dict is no options object either
        speak(tts, _with_path({"options": {"seed": 1}}, where, tmp_path))
    assert not list(tmp_path.iterdir())  # nothing written, not even a hidden part
    # The same options as an object are taken (and seed them).
    one = tts.synthesize("Hi.", None, SpeakOptions(seed=1))
    assert np.array_equal(one, tts.synthesize("Hi.", None, SpeakOptions().with_(seed=1)))
