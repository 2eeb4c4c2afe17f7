"""`pockettts mcp` given what JSON-RPC and MCP clients get wrong, as raw lines on its
stdin (a cut-off line, a batch, a string, the wrong version, an object id, a line far
over the bound) and through the SDK's client (arguments of the wrong type, a FIFO in the
output folder): each gets JSON-RPC's or the tool's one-line answer, never silence or a
hang, and the server serves on."""

from __future__ import annotations

import base64
import io
import json
import os
import queue
import subprocess
import threading

import numpy as np
import pytest
import soundfile as sf

from pocketcli.options import MAX_SEED

pytest.importorskip("mcp")

from tests.serve.test_mcp import call, text_of  # noqa: E402
from tests.support.cli import run  # noqa: E402
from tests.support.protohelp import TINY_ARGS, spawn  # noqa: E402

INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


class Lines(threading.Thread):
    """The server's stdout, line by line, read on a thread (reads wait on a deadline)."""

    def __init__(self, proc: subprocess.Popen) -> None:
        super().__init__(daemon=True)
        self.proc, self.lines = proc, queue.Queue()
        self.start()

    def run(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            self.lines.put(json.loads(raw))
        self.lines.put(None)

    def next(self, timeout: float = 60) -> dict | None:
        return self.lines.get(timeout=timeout)


def send(proc: subprocess.Popen, line: bytes | str | dict) -> None:
    assert proc.stdin is not None
    if isinstance(line, dict):
        line = json.dumps(line)
    proc.stdin.write((line.encode() if isinstance(line, str) else line) + b"\n")
    proc.stdin.flush()


def _answer_to(lines: Lines, proc: subprocess.Popen, line, ping_id: int) -> dict:
    """The answer to ``line``, proven to be its own by a ping sent after it."""
    send(proc, line)
    send(proc, {"jsonrpc": "2.0", "id": ping_id, "method": "ping"})
    answer = lines.next()
    pong = lines.next()
    assert pong == {"jsonrpc": "2.0", "id": ping_id, "result": {}}, (answer, pong)
    return answer


MALFORMED = [
    ('{"jsonrpc": "2.0", "id": 3, "method": "pi', -32700, None),
    ("[1, 2, 3]", -32600, None),
    ('"str"', -32600, None),
    ("42", -32600, None),
    ('{"jsonrpc": "1.0", "id": 5, "method": "ping"}', -32600, 5),
    ('{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}', -32600, None),
    ('{"jsonrpc": "2.0", "id": [1], "method": "ping"}', -32600, None),
    ('{"jsonrpc": "2.0", "id": 6, "method": 7}', -32600, 6),
    (b'{"jsonrpc": "2.0", "id": 8, "method": "\xff"}', -32700, None),
    # nested past Python's parser (10 kB): was an ExceptionGroup, exit 1
    ("[" * 5000 + "]" * 5000, -32700, None),
    # nested past the SDK's parser (200 levels), not Python's: was dropped, never answered
    (
        '{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "status", '
        '"arguments": {"x": ' + "[" * 300 + "]" * 300 + "}}}",
        -32700,
        9,
    ),
]


def test_every_malformed_line_gets_json_rpcs_error_and_the_server_serves_on() -> None:
    args = ("mcp", *TINY_ARGS, "--max-chars", "100")  # lines of at most 12 * 100 + 64 KiB
    with spawn(*args, stdin=subprocess.PIPE, stdout=subprocess.PIPE) as (proc, err):
        lines = Lines(proc)
        send(proc, INIT)
        assert lines.next()["id"] == 0
        send(proc, INITIALIZED)
        answers = [
            _answer_to(lines, proc, line, 100 + i) for i, (line, _, _) in enumerate(MALFORMED)
        ]
        huge = '{"jsonrpc": "2.0", "id": 9, "method": "ping", "params": {"x": "' + "y" * 4_000_000
        long_answer = _answer_to(lines, proc, huge + '"}}', 200)
        proc.stdin.close()  # the client leaves: the server ends, cleanly
        assert proc.wait(60) == 0, err.text()
    for answer, (line, code, request_id) in zip(answers, MALFORMED, strict=True):
        assert answer["jsonrpc"] == "2.0" and "result" not in answer, (line, answer)
        assert answer["id"] == request_id and answer["error"]["code"] == code, (line, answer)
        assert "\n" not in answer["error"]["message"], answer
    assert long_answer["error"]["code"] == -32600 and long_answer["id"] is None
    assert "over 66736 bytes" in long_answer["error"]["message"], long_answer
    assert "Traceback" not in err.text()


class _Counting(io.BytesIO):
    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.largest = 0

    def readline(self, size: int | None = -1) -> bytes:
        line = super().readline(size)
        self.largest = max(self.largest, len(line))
        return line


def test_an_over_long_line_is_skipped_in_bounded_pieces() -> None:
    from pocketcli.mcp.transport import LineTooLong, read_line

    stream = _Counting(b"x" * 5_000_000 + b"\n" + b'{"next": 1}\n')
    assert isinstance(read_line(stream, 1000), LineTooLong)
    assert stream.largest <= 1 << 16  # never the whole line at once
    assert read_line(stream, 1000) == b'{"next": 1}\n'  # the next line is whole
    assert read_line(stream, 1000) == b""


def test_arguments_of_the_wrong_type_are_one_line_naming_the_field() -> None:
    async def steps(session):
        out = []
        for name, arguments in (
            ("synthesize", {"text": 5}),
            ("speak", {"text": "Hi.", "interrupt": "maybe"}),
            ("synthesize", {"voice": "voice"}),
        ):
            out.append(await session.call_tool(name, arguments))
        return out

    wrong_text, wrong_flag, missing = call(list(TINY_ARGS), steps)
    messages = [text_of(r) for r in (wrong_text, wrong_flag, missing)]
    assert all(r.is_error for r in (wrong_text, wrong_flag, missing)), messages
    assert messages == [
        "synthesize: text must be a string, not 5",
        "speak: interrupt must be true or false, not 'maybe'",
        "synthesize: text is missing",
    ]


def test_synthesize_with_a_seed_gives_the_audio_of_tts_with_that_seed() -> None:
    """The same text, voice and seed give the same samples as ``pockettts tts --seed N -o -``
    (streamed, through the output chain's causal filters) with the same speed, and again on a
    second call; a seed out of bounds is the tool's one line, as the CLI's --seed refuses it."""
    text = "The same seed gives the same audio."

    async def steps(session):
        made = [
            await session.call_tool("synthesize", {"text": text, "seed": seed, "speed": 1.3})
            for seed in (MAX_SEED, MAX_SEED, 7)
        ]
        bad = [
            await session.call_tool("synthesize", {"text": text, "seed": seed})
            for seed in (-1, MAX_SEED + 1, "seven", 2.5, True)
        ]
        tools = {t.name: t for t in (await session.list_tools()).tools}
        return made, bad, tools["synthesize"].input_schema["properties"]["seed"]

    made, bad, schema = call(list(TINY_ARGS), steps)
    assert {"minimum": 0, "exclusiveMaximum": MAX_SEED + 1}.items() <= schema.items(), schema
    got = [_pcm_of(result) for result in made]
    cli = run("tts", text, *TINY_ARGS, "--seed", str(MAX_SEED), "--speed", "1.3",
              "-q", "-o", "-", "--format", "s16le")  # fmt: skip
    assert cli.returncode == 0, cli.stderr
    want = np.frombuffer(cli.stdout, "<i2")
    assert want.size > 1920 and np.array_equal(got[0], want)
    assert np.array_equal(got[1], want)  # the same again: the seed, not the call, decides
    assert not np.array_equal(got[2], want)  # another seed, other noise
    messages = [text_of(r) for r in bad]
    assert all(r.is_error for r in bad), messages
    bound = "seed must be a whole number from 0 to 2^64-1, not"
    assert messages[:2] == [f"synthesize: {bound} -1", f"synthesize: {bound} {MAX_SEED + 1}"]
    assert messages[2:4] == [
        "synthesize: seed must be a whole number, not 'seven'",
        "synthesize: seed must be a whole number, not 2.5",
    ]
    assert messages[4] == "synthesize: seed must be a whole number, not True", messages


def _pcm_of(result) -> np.ndarray:
    assert not result.is_error, text_of(result)
    (audio,) = [c for c in result.content if c.type == "audio"]
    samples, rate = sf.read(io.BytesIO(base64.b64decode(audio.data)), dtype="int16")
    assert rate == 24000
    return samples


def test_an_argument_a_tool_does_not_take_is_one_line_naming_it() -> None:
    """A misspelt argument (``voise``) used to be dropped: the default voice spoke."""

    async def steps(session):
        out = [
            await session.call_tool(name, arguments)
            for name, arguments in (
                ("synthesize", {"text": "Hi.", "voise": "voice"}),
                ("speak", {"text": "Hi.", "sped": 2, "intterupt": True}),
                ("stop_speaking", {"now": True}),
            )
        ]
        return (
            out,
            await session.call_tool("status", {}),
            await session.call_tool("synthesize", {"text": "Hi.", "voice": "voice"}),
        )

    refused, status, spoken = call(list(TINY_ARGS), steps)
    messages = [text_of(r) for r in refused]
    assert all(r.is_error for r in refused), messages
    assert messages == [
        "synthesize: unknown argument 'voise' (it takes text, voice, language, path, speed,"
        " words, seed)",
        "speak: unknown arguments 'sped', 'intterupt' (it takes text, voice, language,"
        " interrupt, speed)",
        "stop_speaking: unknown argument 'now' (it takes no arguments)",
    ]
    assert not status.is_error and status.structured_content["waiting"] == 0
    assert status.structured_content["speaking"] is False  # nothing was queued
    assert not spoken.is_error, text_of(spoken)  # the server serves on


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_in_the_output_folder_is_refused_and_the_server_still_ends(tmp_path) -> None:
    os.mkfifo(tmp_path / "fifo.wav")
    (tmp_path / "folder.wav").mkdir()
    args = ("mcp", *TINY_ARGS, "--output-dir", str(tmp_path))
    with spawn(*args, stdin=subprocess.PIPE, stdout=subprocess.PIPE) as (proc, err):
        lines = Lines(proc)
        send(proc, INIT)
        lines.next()
        send(proc, INITIALIZED)
        answers = []
        for i, path in enumerate(("fifo.wav", "folder.wav")):
            arguments = {"text": "Hi.", "path": path}
            params = {"name": "synthesize", "arguments": arguments}
            send(proc, {"jsonrpc": "2.0", "id": 10 + i, "method": "tools/call", "params": params})
            answers.append(lines.next())
        proc.stdin.close()
        assert proc.wait(60) == 0, err.text()
    fifo, folder = (a["result"] for a in answers)
    assert fifo["isError"] and folder["isError"]
    assert fifo["content"][0]["text"] == (
        "synthesize: 'fifo.wav' is a FIFO (named pipe), not a regular file: not written"
    )
    assert "'folder.wav' is a directory" in folder["content"][0]["text"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo.wav", "folder.wav"]


def test_max_chars_has_serves_maximum() -> None:
    from pocketcli.serve.settings import MAXIMA

    over = str(MAXIMA["max_chars"] + 1)
    r = run("mcp", *TINY_ARGS, "--max-chars", over)
    assert r.returncode == 2 and b"--max-chars" in r.stderr, r.stderr
    assert str(MAXIMA["max_chars"]).encode() in r.stderr


def test_synthesize_goes_through_the_admission_and_says_busy() -> None:
    # One stream at a time and no queue: of three calls at once, one is spoken and the
    # others are told the server is busy (the tool's one line), as HTTP answers 503.
    long_text = "This sentence keeps the model busy for a while. " * 40

    async def steps(session):
        import asyncio

        calls = [session.call_tool("synthesize", {"text": long_text}) for _ in range(3)]
        results = await asyncio.gather(*calls)
        after = await session.call_tool("synthesize", {"text": "Hi."})
        return results, after

    args = [*TINY_ARGS, "--max-streams", "1", "--max-queue", "0"]
    results, after = call(args, steps)
    spoken = [r for r in results if not r.is_error]
    busy = [text_of(r) for r in results if r.is_error]
    assert len(spoken) == 1 and len(busy) == 2, busy
    assert all(m.startswith("synthesize: the server is busy; retry in") for m in busy), busy
    assert all("at most 1 at once" in m for m in busy), busy
    assert not after.is_error, text_of(after)  # the stream's slot is free again


@pytest.mark.parametrize(
    ("command", "flag", "value"),
    [
        ("mcp", "--max-streams", "257"),
        ("mcp", "--max-queue", "1001"),
        ("mcp", "--request-timeout", "inf"),
        ("wyoming", "--max-chars", "999999999999"),
        ("wyoming", "--idle-timeout", "inf"),
    ],
)
def test_limit_flags_have_serves_maxima(command, flag, value) -> None:
    # Refused as it is read: a server that took the value would start (the deadline fails it).
    r = run(command, *TINY_ARGS, flag, value, stdin=b"", timeout=60)
    assert r.returncode == 2 and flag.encode() in r.stderr, r.stderr
