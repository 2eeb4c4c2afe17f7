"""MCP's ``synthesize`` with ``words: true`` (issue 35 item 3): the audio, and its words as
JSON text beside it and as structured content; a model that cannot time words is a tool
error in one line. Through the reference SDK's own stdio client, as tests/serve/test_mcp.py
starts the server."""

from __future__ import annotations

import base64
import io
import json

import pytest

pytest.importorskip("mcp")

import soundfile as sf  # noqa: E402

from tests.serve.test_mcp import call, text_of  # noqa: E402
from tests.support.protohelp import VOICE  # noqa: E402

TEXT = "Hello there, this is the longest line. It is spoken in several chunks!"


def _args(pack) -> list[str]:
    return ["--model-dir", str(pack), "--voice-file", str(VOICE), "--runtime", "onnx"]


def test_synthesize_returns_the_words_of_its_audio(words_pack) -> None:
    async def steps(session):
        timed = await session.call_tool("synthesize", {"text": TEXT, "words": True})
        plain = await session.call_tool("synthesize", {"text": "Hello there."})
        return timed, plain

    timed, plain = call(_args(words_pack), steps)
    assert not timed.is_error, text_of(timed)
    audio = next(c for c in timed.content if c.type == "audio")
    samples, rate = sf.read(io.BytesIO(base64.b64decode(audio.data)))
    words = timed.structured_content["words"]
    texts = [c.text for c in timed.content if c.type == "text"]
    assert json.loads(texts[-1]) == {"words": words}  # the same words as JSON text
    assert f"{len(words)} words timed" in texts[0]
    assert words and set(words[0]) == {"word", "start", "end"}  # (its own random noise)
    said = iter(TEXT.replace(",", "").replace(".", "").replace("!", "").split())
    assert all(w["word"] in said for w in words)  # the text's words, in order
    for before, after in zip(words, words[1:], strict=False):
        assert before["start"] < before["end"] <= after["start"] < after["end"]
    assert words[-1]["end"] <= len(samples) / rate + 1e-3
    assert not plain.is_error and plain.structured_content is None  # not asked: no words
    assert len([c for c in plain.content if c.type == "text"]) == 1


def test_a_model_that_cannot_time_words_is_a_one_line_tool_error(pack_dir) -> None:
    async def steps(session):
        failed = await session.call_tool("synthesize", {"text": "Hello.", "words": True})
        still = await session.call_tool("synthesize", {"text": "Hello."})
        return failed, still

    failed, still = call(_args(pack_dir), steps)
    assert failed.is_error
    said = text_of(failed)
    assert "\n" not in said and said.startswith("synthesize: cannot time words:"), said
    assert "timestamp_heads" in said
    assert not still.is_error  # the server keeps serving
