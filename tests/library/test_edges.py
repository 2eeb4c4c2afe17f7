"""Library edges a Python user meets: a short repr, and a cancelled session that says so."""

from __future__ import annotations

import pytest

from pocketcli.api import PocketTTS
from pocketcli.session import SessionClosed


@pytest.fixture(scope="module")
def tts(pack_dir) -> PocketTTS:
    return PocketTTS.open(model_dir=pack_dir)


def test_a_voice_state_repr_is_one_short_line(tts, voice_path) -> None:
    voice = tts.voices.load(voice_path)
    text = repr(voice)
    assert len(text) < 200 and "\n" not in text, text
    assert text.startswith("VoiceState(") and f"positions={voice.length}" in text
    assert "array" not in text


def test_enqueue_after_cancel_says_cancelled_and_after_finish_says_finished(tts, voice_path):
    voice = tts.voices.load(voice_path)
    session = tts.session(voice)
    session.cancel()
    with pytest.raises(SessionClosed, match="cancelled"):
        session.enqueue("Hello.")
    other = tts.session(voice)
    other.finish()
    with pytest.raises(SessionClosed, match="finished"):
        other.enqueue("Hello.")
    list(other)
