"""A hostile user's sweep of every front end and every file a user hands over (issue 32, item 5).

Runs on the committed tiny pack, bounded in time (each case has a deadline; the whole run
stops starting new cases past ``--budget`` seconds). Every case is a real run: the
``pockettts`` CLI as a subprocess, or a real server (HTTP with SSE and the websocket,
Wyoming, MCP) on 127.0.0.1 / stdin, spoken to by real clients.

What no case may show (the classes of issue 32):

- a traceback or an exception's class name in what the user reads;
- an exit code other than 0, 1 (runtime failure) or 2 (usage error), or the wrong one of them;
- a hang (past the case's deadline);
- memory (peak RSS) past a bound far below what a believed claim would cost;
- anything at an output path lost, or a silent/broken output file;
- a server that stops answering, or whose memory or threads grow with its clients' input.

    python scripts/hostile_sweep.py                 # every group (a few minutes)
    python scripts/hostile_sweep.py -k voice        # only groups/cases whose name has "voice"
    python scripts/hostile_sweep.py --list          # the cases, without running them
    SWEEP_CODE=/other/checkout python scripts/hostile_sweep.py   # sweep another checkout

Exit status: 0 when every case held, 1 otherwise (the failures are listed).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import wave
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CODE = Path(os.environ.get("SWEEP_CODE", ROOT))  # the checkout whose pocketcli is swept
TINY = ROOT / "tests" / "fixtures" / "tiny"
PACK = TINY / "pack"
VOICE = TINY / "voice.safetensors"
PROMPT = TINY / "clone_prompt_24k.wav"
CONFIG = TINY / "config.yaml"
CLI = [shutil.which("pockettts") or str(Path(sys.executable).with_name("pockettts"))]
MODEL = ["--model-dir", str(PACK)]
VOICED = [*MODEL, "--voice-file", str(VOICE)]
MEM_LIMIT_MB = 900  # the tiny model runs in ~250 MB; a believed claim costs gigabytes
CASE_TIMEOUT = 60.0

_CLASS_NAME = re.compile(
    r"\b(?:[A-Z][A-Za-z0-9]*(?:Error|Exception|Warning)|KeyboardInterrupt|StopIteration"
    r"|SystemExit|BrokenPipe)\b"
)


# --------------------------------------------------------------------------- the harness


def user_env() -> dict[str, str]:
    """A user's environment: no debug tracebacks, the Hub offline, this checkout's code."""
    env = {k: v for k, v in os.environ.items() if k not in ("POCKETTTS_DEBUG", "PYTHONWARNINGS")}
    return env | {"PYTHONPATH": str(CODE), "HF_HUB_OFFLINE": "1", "NO_COLOR": "1"}


@dataclass
class Run:
    rc: int | None  # None: it did not end by its deadline
    stdout: bytes
    stderr: bytes
    maxrss_mb: float
    seconds: float

    @property
    def err(self) -> str:
        return self.stderr.decode("utf-8", "replace")


@dataclass
class Case:
    group: str
    name: str
    body: Callable[[Path], str | None]  # None: held; else what went wrong


@dataclass
class Outcome:
    case: Case
    problem: str | None
    seconds: float


@dataclass
class Sweep:
    cases: list[Case] = field(default_factory=list)

    def add(self, group: str, name: str) -> Callable:
        def register(fn: Callable[[Path], str | None]) -> Callable[[Path], str | None]:
            self.cases.append(Case(group, name, fn))
            return fn

        return register


SWEEP = Sweep()


def run_cli(
    argv: list[str],
    cwd: Path,
    stdin: bytes | None = None,
    timeout: float = CASE_TIMEOUT,
    env: dict[str, str] | None = None,
) -> Run:
    """The CLI as a user runs it; peak RSS from wait4, killed (rc None) past the deadline."""
    environ = {**user_env(), **(env or {})}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        with tempfile.TemporaryFile() as inp:
            if stdin is not None:
                inp.write(stdin)
                inp.seek(0)
            proc = subprocess.Popen(
                [*CLI, *argv],
                cwd=cwd,
                stdin=inp if stdin is not None else subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                env=environ,
                start_new_session=True,
            )
        start = time.monotonic()
        rc, rss = None, 0.0
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                rc = os.waitstatus_to_exitcode(status)
                rss = usage.ru_maxrss / 1024
                break
            if time.monotonic() - start > timeout:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                os.wait4(proc.pid, 0)
                break
            time.sleep(0.02)
        proc.returncode = rc if rc is not None else -9
        out.seek(0)
        err.seek(0)
        return Run(rc, out.read(), err.read(), rss, time.monotonic() - start)


def shown_problem(text: str) -> str | None:
    """A traceback or an exception class name in what the user reads."""
    if "Traceback" in text:
        return "traceback shown"
    found = _CLASS_NAME.search(text)
    if found:
        return f"exception class name shown: {found.group(0)}"
    return None


def judge(run: Run, expect: set[int] | int, *, stdout_is_text: bool = True) -> str | None:
    """The common checks; ``expect`` the exit codes this case may end with."""
    want = {expect} if isinstance(expect, int) else expect
    if run.rc is None:
        return f"hang: no exit in {run.seconds:.0f} s"
    if run.rc not in (0, 1, 2):
        return f"exit code {run.rc}: {run.err.strip()[-300:]!r}"
    if run.rc not in want:
        return f"exit code {run.rc}, wanted {sorted(want)}: {run.err.strip()[-300:]!r}"
    for text in (run.err, run.stdout.decode("utf-8", "replace") if stdout_is_text else ""):
        problem = shown_problem(text)
        if problem:
            return f"{problem}: {text.strip()[-300:]!r}"
    if run.maxrss_mb > MEM_LIMIT_MB:
        return f"peak memory {run.maxrss_mb:.0f} MB (bound {MEM_LIMIT_MB} MB)"
    if run.rc:
        errors = [line for line in run.err.splitlines() if line.startswith("pockettts: ")]
        if not errors:
            return f"exit {run.rc} without an error line: {run.err.strip()[-300:]!r}"
        if len(errors[0]) > 2000:
            return f"error line of {len(errors[0])} characters"
    return None


def wav_ok(path: Path) -> str | None:
    """A whole, readable WAV with sound in it (not silent, not broken)."""
    try:
        with wave.open(str(path), "rb") as w:
            frames = w.readframes(w.getnframes())
            if w.getnframes() == 0 or len(frames) != w.getnframes() * w.getsampwidth():
                return f"{path.name}: WAV of {w.getnframes()} frames, {len(frames)} bytes"
    except (OSError, EOFError, wave.Error) as exc:
        return f"{path.name}: not a readable WAV ({exc})"
    return None


def tree(path: Path) -> dict[str, bytes | str]:
    """What is at a path (files and their bytes, links and their targets)."""
    found: dict[str, bytes | str] = {}
    if path.is_symlink():
        return {".": "-> " + os.readlink(path)}
    if path.is_file():
        return {".": path.read_bytes()}
    if path.is_dir():
        for p in sorted(path.rglob("*")):
            key = str(p.relative_to(path))
            if p.is_symlink():
                found[key] = "-> " + os.readlink(p)
            elif p.is_file():
                found[key] = p.read_bytes()
    return found


# ------------------------------------------------------------------------- file makers


def wav_bytes(rate: int = 24000, channels: int = 1, seconds: float = 1.0, width: int = 2) -> bytes:
    n = int(rate * seconds)
    t = np.arange(n) / max(rate, 1)
    tone = (0.3 * np.sin(2 * np.pi * 220 * t) * 32767).astype("<i2")
    data = np.repeat(tone, channels).tobytes()
    if width != 2:
        data = b"\0" * (n * channels * width)
    fmt = struct.pack(
        "<HHIIHH", 1, channels, rate, rate * channels * width, channels * width, 8 * width
    )
    return (
        b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVE"
        + b"fmt " + struct.pack("<I", 16) + fmt
        + b"data" + struct.pack("<I", len(data)) + data
    )  # fmt: skip


def wav_header(channels: int, rate: int, bits: int, data_len: int, fmt_tag: int = 1) -> bytes:
    block = max(channels * bits // 8, 0) & 0xFFFF
    fmt = struct.pack("<HHIIHH", fmt_tag, channels, rate, (rate * block) & 0xFFFFFFFF, block, bits)
    return (
        b"RIFF" + struct.pack("<I", 0xFFFFFFFF) + b"WAVE" + b"fmt " + struct.pack("<I", 16)
        + fmt + b"data" + struct.pack("<I", data_len)
    )  # fmt: skip


def safetensors_bytes(header: dict | bytes, data: bytes = b"", claim: int | None = None) -> bytes:
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(raw) if claim is None else claim) + raw + data


def npy_bytes(header: str, data: bytes = b"", version: bytes = b"\x01\x00") -> bytes:
    raw = header.encode("latin1")
    pad = 64 - (10 + len(raw) + 1) % 64
    raw = raw + b" " * pad + b"\n"
    return b"\x93NUMPY" + version + struct.pack("<H", len(raw)) + raw + data


def voices_bin(count: int, entries: list[tuple[bytes, int, int, bytes]]) -> bytes:
    out = struct.pack("<I", count)
    for name, t, d, data in entries:
        out += name.ljust(32, b"\0")[:32] + struct.pack("<II", t, d) + data
    return out


def nested_json(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def copy_pack(dst: Path) -> Path:
    shutil.copytree(PACK, dst, symlinks=True)
    return dst


# ------------------------------------------------------------------ group: voice files

VOICE_FILES: dict[str, Callable[[], bytes]] = {
    "zero bytes .npy": lambda: b"",
    "npy magic only": lambda: b"\x93NUMPY",
    "npy header length past file": lambda: b"\x93NUMPY\x01\x00" + struct.pack("<H", 60000) + b"{",
    "npy huge shape claim": lambda: npy_bytes(
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 4000000000, 64), }"
    ),
    "npy negative shape": lambda: npy_bytes(
        "{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 64), }", b"\0" * 256
    ),
    "npy object dtype (pickle)": lambda: npy_bytes(
        "{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", b"\x80\x04N." * 2
    ),
    "npy complex dtype": lambda: npy_bytes(
        "{'descr': '<c8', 'fortran_order': False, 'shape': (4, 64), }", b"\0" * 2048
    ),
    "npy NaN values": lambda: npy_bytes(
        "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 64), }",
        np.full((4, 64), np.nan, "<f4").tobytes(),
    ),
    "npy header is code": lambda: npy_bytes("__import__('os').system('touch PWNED')"),
    "npy version 9": lambda: npy_bytes(
        "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 64), }", b"\0" * 1024, b"\x09\x00"
    ),
    "npy fortran order 3-d": lambda: npy_bytes(
        "{'descr': '<f4', 'fortran_order': True, 'shape': (1, 4, 64), }", b"\0" * 1024
    ),
    "npy shape with 7 dims": lambda: npy_bytes(
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,4,64), }", b"\0" * 1024
    ),
    "npy big-endian float64": lambda: npy_bytes(
        "{'descr': '>f8', 'fortran_order': False, 'shape': (4, 64), }",
        np.zeros((4, 64), ">f8").tobytes(),
    ),
    "npz (zip) of an array": lambda: _npz(),
    "zip bomb claim": lambda: b"PK\x03\x04" + b"\0" * 26 + b"\xff" * 8,
    "safetensors header claim 2^63": lambda: safetensors_bytes(b"{}", claim=(1 << 63)),
    "safetensors header claim past file": lambda: safetensors_bytes(b"{}", claim=1 << 30),
    "safetensors header not JSON": lambda: safetensors_bytes(b"\xff\xfe{{{{"),
    "safetensors deeply nested header": lambda: safetensors_bytes(nested_json(100000)),
    "safetensors header nested 5000 deep": lambda: safetensors_bytes(nested_json(5000)),
    "safetensors duplicate keys": lambda: safetensors_bytes(
        b'{"audio_prompt": {"dtype": "F32", "shape": [1, 1, 64], "data_offsets": [0, 256]},'
        b' "audio_prompt": {"dtype": "F32", "shape": [1, 2, 64], "data_offsets": [0, 512]}}',
        b"\0" * 512,
    ),
    "safetensors offsets reversed": lambda: safetensors_bytes(
        {"audio_prompt": {"dtype": "F32", "shape": [1, 1, 64], "data_offsets": [256, 0]}},
        b"\0" * 256,
    ),
    "safetensors overlapping tensors": lambda: safetensors_bytes(
        {
            "audio_prompt": {"dtype": "F32", "shape": [1, 1, 64], "data_offsets": [0, 256]},
            "x": {"dtype": "F32", "shape": [64], "data_offsets": [0, 256]},
        },
        b"\0" * 256,
    ),
    "safetensors shape overflow": lambda: safetensors_bytes(
        {"audio_prompt": {"dtype": "F32", "shape": [2**62, 2**62, 64], "data_offsets": [0, 0]}}
    ),
    "safetensors negative shape": lambda: safetensors_bytes(
        {"audio_prompt": {"dtype": "F32", "shape": [1, -4, 64], "data_offsets": [0, 0]}}
    ),
    "safetensors float shape": lambda: safetensors_bytes(
        {"audio_prompt": {"dtype": "F32", "shape": [1, 1.5, 64], "data_offsets": [0, 384]}},
        b"\0" * 384,
    ),
    "safetensors unknown dtype": lambda: safetensors_bytes(
        {"audio_prompt": {"dtype": "Q7", "shape": [1, 1, 64], "data_offsets": [0, 64]}},
        b"\0" * 64,
    ),
    "safetensors bool dtype": lambda: safetensors_bytes(
        {"audio_prompt": {"dtype": "BOOL", "shape": [1, 1, 64], "data_offsets": [0, 64]}},
        b"\1" * 64,
    ),
    "safetensors header is a list": lambda: safetensors_bytes(b"[1, 2, 3]"),
    "safetensors metadata not strings": lambda: safetensors_bytes(
        {
            "__metadata__": {"a": [1, 2]},
            "audio_prompt": {"dtype": "F32", "shape": [1, 1, 64], "data_offsets": [0, 256]},
        },
        b"\0" * 256,
    ),
    "safetensors Inf prompt": lambda: safetensors_bytes(
        {"audio_prompt": {"dtype": "F32", "shape": [1, 2, 64], "data_offsets": [0, 512]}},
        np.full((2, 64), np.inf, "<f4").tobytes(),
    ),
    "safetensors state with 10^6 layers named": lambda: safetensors_bytes(
        {
            f"transformer.layers.{n}.self_attn/cache": {
                "dtype": "F32",
                "shape": [2, 1, 1, 4, 16],
                "data_offsets": [0, 512],
            }
            for n in (0, 999999)
        },
        b"\0" * 512,
    ),
    "safetensors state huge offset value": lambda: safetensors_bytes(
        {
            "transformer.layers.0.self_attn/cache": {
                "dtype": "F32",
                "shape": [2, 1, 1, 4, 16],
                "data_offsets": [0, 512],
            },
            "transformer.layers.0.self_attn/offset": {
                "dtype": "I64",
                "shape": [1],
                "data_offsets": [512, 520],
            },
        },
        b"\0" * 512 + struct.pack("<q", 2**62),
    ),  # fmt: skip
    "voices.bin count 2^32-1": lambda: voices_bin(0xFFFFFFFF, []),
    "voices.bin frames claim 2^31": lambda: voices_bin(1, [(b"alba", 2**31, 64, b"\0" * 256)]),
    "voices.bin width 0": lambda: voices_bin(1, [(b"alba", 4, 0, b"")]),
    "voices.bin name not UTF-8": lambda: voices_bin(1, [(b"\xff\xfe\x80", 1, 64, b"\0" * 256)]),
    "voices.bin name with NUL and slash": lambda: voices_bin(
        1, [(b"../../x\0y", 1, 64, b"\0" * 256)]
    ),
    "voices.bin two voices one name": lambda: voices_bin(
        2, [(b"a", 1, 64, b"\0" * 256), (b"a", 1, 64, b"\0" * 256)]
    ),
    "PTVB1 truncated": lambda: b"PTVB1" + b"\xff" * 11,
    "raw .bin not multiple of a frame": lambda: b"\0" * 1000,
    "raw .bin of 10^4 frames": lambda: b"\0" * (256 * 10000),
    "text file named .safetensors": lambda: b"hello, I am a voice\n" * 10,
    "UTF-16 text": lambda: "voice".encode("utf-16"),
    "WAV given as voice file": lambda: wav_bytes(seconds=0.2),
}


# a frame sync, then noise libmpg123 prints "Note: Illegal Audio-MPEG-Header" about
DAMAGED_MP3 = b"\xff\xfb" + np.random.default_rng(29).bytes(8192)


def _npz() -> bytes:
    import io

    buf = io.BytesIO()
    np.savez(buf, audio_prompt=np.zeros((1, 4, 64), np.float32))
    return buf.getvalue()


def _voice_file_case(label: str, make: Callable[[], bytes]) -> None:
    suffix = ".npy" if "npy" in label else ".bin" if "bin" in label else ".safetensors"
    if "npz" in label or "zip" in label:
        suffix = ".npz"

    @SWEEP.add("voice files (--voice-file, tts)", label)
    def body(tmp: Path) -> str | None:
        path = tmp / f"voice{suffix}"
        path.write_bytes(make())
        run = run_cli(
            ["tts", "hello", "-o", "out.wav", "-q", *MODEL, "--voice-file", path.name], tmp
        )
        problem = judge(run, {0, 1})
        if problem:
            return problem
        if (tmp / "PWNED").exists():
            return "a header ran code"
        if run.rc == 0:
            return wav_ok(tmp / "out.wav")
        if (tmp / "out.wav").exists():
            return "a failed run left out.wav"
        return None

    @SWEEP.add("voice files (inspect)", label)
    def inspect(tmp: Path) -> str | None:
        path = tmp / f"voice{suffix}"
        path.write_bytes(make())
        run = run_cli(["inspect", path.name, *MODEL], tmp)
        return judge(run, {0, 1})


for _label, _make in VOICE_FILES.items():
    _voice_file_case(_label, _make)


# ------------------------------------------------------------ group: audio to clone

AUDIO_FILES: dict[str, Callable[[], bytes]] = {
    "WAV 65535 channels": lambda: wav_header(65535, 24000, 16, 0xFFFFFFF0) + b"\0" * 4096,
    "WAV rate 1 Hz": lambda: wav_header(1, 1, 16, 8) + b"\0" * 8,
    "WAV rate 4 GHz": lambda: wav_header(1, 0xFFFFFFFF, 16, 4096) + b"\0" * 4096,
    "WAV rate 0": lambda: wav_header(1, 0, 16, 4096) + b"\0" * 4096,
    "WAV 0 channels": lambda: wav_header(0, 24000, 16, 4096) + b"\0" * 4096,
    "WAV 7 bits": lambda: wav_header(1, 24000, 7, 4096) + b"\0" * 4096,
    "WAV float NaN samples": lambda: (
        wav_header(1, 24000, 32, 48000, 3) + np.full(12000, np.nan, "<f4").tobytes()
    ),
    "WAV float Inf samples": lambda: (
        wav_header(1, 24000, 32, 48000, 3) + np.full(12000, np.inf, "<f4").tobytes()
    ),
    "WAV data claim 4 GB, 1 s present": lambda: (
        wav_header(1, 24000, 16, 0xFFFFFFFF) + wav_bytes()[44:]
    ),
    "WAV header only": lambda: wav_header(1, 24000, 16, 0),
    "WAV 1 sample": lambda: wav_bytes(seconds=1 / 24000),
    "WAV all zeros (silence)": lambda: wav_header(1, 24000, 16, 48000) + b"\0" * 48000,
    "WAV 8 channels 8 kHz": lambda: wav_bytes(rate=8000, channels=8, seconds=1.0),
    "WAV 384 kHz": lambda: wav_bytes(rate=384000, seconds=0.5),
    "WAV 10 minutes": lambda: wav_bytes(rate=8000, seconds=600),
    "FLAC magic then garbage": lambda: b"fLaC" + os.urandom(4096),
    "OGG magic then garbage": lambda: b"OggS" + os.urandom(4096),
    "MP3 ID3 claim 256 MB": lambda: b"ID3\x04\x00\x00\x7f\x7f\x7f\x7f" + os.urandom(2048),
    "MP3 frame sync garbage": lambda: DAMAGED_MP3,
    "M4A ftyp garbage": lambda: b"\0\0\0\x20ftypM4A " + os.urandom(4096),
    "random bytes": lambda: os.urandom(20000),
    "text file": lambda: b"not audio at all\n" * 100,
    "zero bytes": lambda: b"",
    "safetensors voice as recording": lambda: VOICE.read_bytes(),
}


def _audio_case(label: str, make: Callable[[], bytes]) -> None:
    ext = ".wav"
    for key, value in (("FLAC", ".flac"), ("OGG", ".ogg"), ("MP3", ".mp3"), ("M4A", ".m4a")):
        if label.startswith(key):
            ext = value

    @SWEEP.add("recordings (clone)", label)
    def body(tmp: Path) -> str | None:
        (tmp / f"rec{ext}").write_bytes(make())
        run = run_cli(["clone", f"rec{ext}", "-o", "v.safetensors", "-q", *MODEL], tmp, timeout=120)
        problem = judge(run, {0, 1})
        if problem:
            return problem
        if run.rc and (tmp / "v.safetensors").exists():
            return "a failed clone left v.safetensors"
        return None

    @SWEEP.add("recordings (tts --clone-voice)", label)
    def tts(tmp: Path) -> str | None:
        (tmp / f"rec{ext}").write_bytes(make())
        run = run_cli(
            ["tts", "hi", "-o", "o.wav", "-q", *MODEL, "--clone-voice", f"rec{ext}"],
            tmp,
            timeout=120,
        )
        problem = judge(run, {0, 1})
        if problem or run.rc:
            return problem
        return wav_ok(tmp / "o.wav")


for _label, _make in AUDIO_FILES.items():
    _audio_case(_label, _make)


# ------------------------------------------------------------- group: text and stdin

STDIN_TEXTS: dict[str, bytes] = {
    "NUL bytes in text": b"hello\0world\0",
    "Latin-1 bytes (not UTF-8)": "caf\u00e9 cr\u00e8me".encode("latin1"),
    "lone surrogate bytes": b"hi \xed\xa0\x80 there",
    "UTF-32 with BOM": "hello there".encode("utf-32"),
    "only a BOM": b"\xef\xbb\xbf",
    "only whitespace": b"   \n\t\r\n  ",
    "one 3 MB line (normalize only: tts would speak it for hours)": b"a" * (3 << 20),
    "100k newlines": b"\n" * 100000,
    "control characters": bytes(range(1, 32)) * 10,
    "RTL and combining marks": "\u202ehello\u0301\u0301\u0301\u200b".encode(),
    "emoji only": "\U0001f600\U0001f680".encode(),
    "SSML bomb nesting": b"<speak>"
    + b"<prosody>" * 5000
    + b"hi"
    + b"</prosody>" * 5000
    + b"</speak>",
    "SSML entity expansion": b'<?xml version="1.0"?><!DOCTYPE s [<!ENTITY a "aaaaaaaaaa">'
    b'<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">'
    b"]><speak>&c;&c;&c;</speak>",
    "SSML external entity": b'<?xml version="1.0"?><!DOCTYPE s [<!ENTITY x SYSTEM '
    b'"file:///etc/passwd">]><speak>&x;</speak>',
    "SSML break 10^9 s": b'<speak>a<break time="1000000000s"/>b</speak>',
    "SSML break negative": b'<speak>a<break time="-5s"/>b</speak>',
    "SSML break NaN": b'<speak>a<break time="nans"/>b</speak>',
    "huge number": b"1" * 5000,
    "10^5 decimals (normalize only: tts would speak it for hours)": b"0." + b"9" * 100000,
}


def _stdin_case(label: str, data: bytes) -> None:
    @SWEEP.add("text on stdin (tts)", label)
    def body(tmp: Path) -> str | None:
        if "normalize only" in label:
            return None
        run = run_cli(["tts", "-o", "o.wav", "-q", *VOICED], tmp, stdin=data, timeout=120)
        problem = judge(run, {0, 1, 2})
        if problem or run.rc:
            return problem or ("a failed run left o.wav" if (tmp / "o.wav").exists() else None)
        return wav_ok(tmp / "o.wav")

    @SWEEP.add("text on stdin (normalize)", label)
    def norm(tmp: Path) -> str | None:
        return judge(run_cli(["normalize"], tmp, stdin=data), {0, 1, 2})


for _label, _data in STDIN_TEXTS.items():
    _stdin_case(_label, _data)


BATCH_FILES: dict[str, bytes] = {
    "NUL bytes": b"a|hello\0there\nb|fine\n",
    "not UTF-8": b"a|caf\xe9\nb|fine\n",
    "one 1 MB line": b"a|" + b"x" * (1 << 20) + b"\nb|fine\n",
    "id with slash": b"../../escape|hello\nb|fine\n",
    "id that is a device name": b"CON|hello\nNUL.wav|there\n",
    "id 10 kB long": b"i" * 10000 + b"|hello\n",
    "JSON lines": b'{"id": "a", "text": "hello"}\n{"id": "b", "text": ' + b"[" * 10000 + b"\n",
    "CSV with quotes": b'"a","hello, there"\n"b","x"\n',
    "CRLF and lone CR": b"a|hello\r\nb|there\rc|again\n",
    "zero bytes": b"",
    "10^5 empty lines": b"\n" * 100000,
    "only ids, no text": b"a|\nb|\n",
    "pipe only": b"|\n||\n",
    "UTF-16": "a|hello\nb|there\n".encode("utf-16"),
}


def _batch_case(label: str, data: bytes) -> None:
    @SWEEP.add("batch input files (--input-file)", label)
    def body(tmp: Path) -> str | None:
        work = tmp / "a" / "b"
        work.mkdir(parents=True)
        (work / "in.txt").write_bytes(data)
        run = run_cli(
            ["tts", "--input-file", "in.txt", "--output-dir", "out", "-q", *VOICED],
            work,
            timeout=180,
        )
        problem = judge(run, {0, 1, 2})
        if problem:
            return problem
        escaped = [p for p in tmp.rglob("*.wav") if work / "out" not in p.parents]
        if escaped:
            return f"a line wrote outside the output folder: {escaped}"
        for wav in (work / "out").glob("*.wav") if (work / "out").is_dir() else ():
            problem = wav_ok(wav)
            if problem:
                return problem
        return None


for _label, _data in BATCH_FILES.items():
    _batch_case(_label, _data)


def _input_special(label: str, make: Callable[[Path], None]) -> None:
    @SWEEP.add("--input-file special files", label)
    def body(tmp: Path) -> str | None:
        make(tmp)
        run = run_cli(
            ["tts", "--input-file", "in.txt", "--output-dir", "out", "-q", *VOICED], tmp, timeout=30
        )
        root_reads_it = "mode 000" in label and os.getuid() == 0
        return judge(run, {0, 1, 2} if root_reads_it else {1, 2})


_input_special("a folder", lambda t: (t / "in.txt").mkdir())
_input_special("a FIFO nobody writes", lambda t: os.mkfifo(t / "in.txt"))
_input_special("a dangling symlink", lambda t: (t / "in.txt").symlink_to(t / "nowhere"))
_input_special("/dev/zero through a symlink", lambda t: (t / "in.txt").symlink_to("/dev/zero"))
_input_special("missing", lambda t: None)
_input_special("unreadable (mode 000)", lambda t: ((t / "in.txt").write_text("a|b\n"),
                                                   (t / "in.txt").chmod(0)))  # fmt: skip


# ------------------------------------------------------------ group: output paths


def _out_target(target: str, label: str, make: Callable[[Path], None], expect: set[int]) -> None:
    """tts -o TARGET, --metrics, --save-voice, clone -o, batch --output-dir, export OUT."""

    commands = {
        "tts -o": lambda p: ["tts", "hello", "-o", p, "-q", *VOICED],
        "tts --metrics": lambda p: ["tts", "hi", "-o", "ok.wav", "--metrics", p, "-q", *VOICED],
        "tts --save-voice": lambda p: [
            "tts",
            "hi",
            "-o",
            "ok.wav",
            "-q",
            *MODEL,
            "--clone-voice",
            str(PROMPT),
            "--save-voice",
            p,
        ],  # fmt: skip
        "clone -o": lambda p: ["clone", str(PROMPT), "-o", p, "-q", *MODEL],
        "batch --output-dir": lambda p: [
            "tts",
            "--input-file",
            "in.txt",
            "--output-dir",
            p,
            "-q",
            *VOICED,
        ],  # fmt: skip
        "export web": lambda p: [
            *("export", "--format", "web", p, "--config", "c.yaml", "-q", "--offline"),
            *("--voice-clip", str(PROMPT)),
        ],  # fmt: skip
    }
    for cmd, argv in commands.items():
        wanted = ANY if target.startswith("missing/") and cmd in CREATE_PARENTS else expect
        if cmd == "batch --output-dir" and target in (".", ".."):
            wanted = ANY  # an output folder files are added to: the current one is one
        if target == "fifo" and cmd in ("tts -o", "tts --metrics"):
            wanted = {0}  # written into, as README says: a reader is started below

        @SWEEP.add(f"output paths ({cmd})", f"{target!r}: {label}")
        def body(
            tmp: Path, cmd: str = cmd, argv: Callable = argv, expect: set[int] = wanted
        ) -> str | None:
            (tmp / "in.txt").write_text("a|hello\n")
            if cmd == "export web":
                (tmp / "c.yaml").write_text(_BASE_CONFIG)
                (tmp / "model.safetensors").symlink_to(TINY / "model.safetensors")
                (tmp / "tokenizer.model").symlink_to(PACK / "tokenizer.model")
            make(tmp)
            watched = ["keep", "in.txt", "dir"]
            file_writer = cmd not in ("batch --output-dir", "export web")
            if file_writer and target in ("keep", "in.txt", "link"):
                watched = [p for p in watched if p not in (target, "keep")]
            before = {p: tree(tmp / p) for p in watched}
            link_before = os.readlink(tmp / "link") if (tmp / "link").is_symlink() else None
            if target == "fifo" and expect == {0}:
                threading.Thread(target=_drain_fifo, args=(tmp / "fifo",), daemon=True).start()
            run = run_cli(argv(target), tmp, timeout=180)
            problem = judge(run, expect)
            if problem:
                return problem
            for p in watched:
                now = tree(tmp / p)
                if any(now.get(k) != v for k, v in before[p].items()):
                    return f"the user's {p!r} changed or was lost"
            if (
                link_before is not None
                and not file_writer
                and (not (tmp / "link").is_symlink() or os.readlink(tmp / "link") != link_before)
            ):
                return "a symlink of the user's was replaced"
            leftovers = [p.name for p in tmp.iterdir() if p.name.startswith(".")]
            if run.rc == 0 and cmd == "export web" and not list(tmp.rglob("pocket_tts.json")):
                return "exit 0 and no pack written"
            if leftovers:
                return f"left behind: {leftovers}"
            return None


CREATE_PARENTS = ("tts --metrics", "batch --output-dir")


def _drain_fifo(path: Path) -> None:
    with contextlib.suppress(OSError), open(path, "rb") as f:
        while f.read(65536):
            pass


def _keep_in(name: str) -> Callable[[Path], None]:
    def make(tmp: Path) -> None:
        (tmp / name).mkdir()
        (tmp / name / "notes.txt").write_text("mine")

    return make


def _readonly_dir(tmp: Path) -> None:
    (tmp / "ro").mkdir()
    (tmp / "ro").chmod(0o555)


def _user_file(tmp: Path) -> None:
    (tmp / "keep").write_text("mine")


def _user_link(tmp: Path) -> None:
    (tmp / "keep").write_text("mine")
    (tmp / "link").symlink_to("keep")


ANY = {0, 1, 2}
FAIL = {1, 2}
# root writes into a mode-555 folder: then only that nothing is lost is checked
_out_target(
    "ro/target", "inside a read-only folder", _readonly_dir, ANY if os.getuid() == 0 else FAIL
)
# README: -o, --save-voice and export's OUT need an existing folder; --output-dir and
# --metrics create theirs
_out_target("missing/deep/target", "missing parent folders", lambda t: None, FAIL)
_out_target("in.txt", "the input file itself", lambda t: None, ANY)
_out_target("/dev/full", "a device that is always full", lambda t: None, FAIL)
_out_target("link", "a symlink to a file of the user's", _user_link, ANY)
_out_target("fifo", "a FIFO nobody reads", lambda t: os.mkfifo(t / "fifo"), FAIL)
_out_target("dir/", "a folder holding a file of the user's (trailing slash)", _keep_in("dir"), ANY)
_out_target("dir", "a folder holding a file of the user's", _keep_in("dir"), ANY)
_out_target(".", "the current folder", _user_file, FAIL)
_out_target("..", "the parent folder", _user_file, FAIL)
_out_target("/proc/self/x", "a pseudo file system", lambda t: None, FAIL)
_out_target("name\nwith newline", "a newline in the name", lambda t: None, ANY)
_out_target("n" * 300, "a name too long for the file system", lambda t: None, FAIL)


# --------------------------------------------------- group: one file as input and output

SAME_FILE: dict[str, list[str]] = {
    "-o onto --clone-voice's recording": ["--clone-voice", "rec.wav", "-o", "rec.wav"],
    "-o onto it spelled ./x/../": ["--clone-voice", "rec.wav", "-o", "./x/../rec.wav"],
    "--save-voice onto --voice-file (ignored voice)": [
        *("--voice-file", "v.safetensors", "--clone-voice", "rec.wav"),
        *("--save-voice", "v.safetensors", "-o", "a.wav"),
    ],
    "--metrics onto --voice-file": [
        *("--voice-file", "v.safetensors", "-o", "a.wav", "--metrics", "v.safetensors"),
    ],
    "--metrics onto -o": ["--voice-file", "v.safetensors", "-o", "a.wav", "--metrics", "a.wav"],
    "-o through a link onto --voice-file": [
        *("--voice-file", "v.safetensors", "-o", "link.wav", "--format", "wav"),
    ],
    "--save-voice onto -o": [
        *("--clone-voice", "rec.wav", "--save-voice", "s.safetensors"),
        *("-o", "s.safetensors", "--format", "wav"),
    ],
}


def _same_file_case(label: str, args: list[str]) -> None:
    @SWEEP.add("one file as input and output (tts)", label)
    def body(tmp: Path) -> str | None:
        shutil.copy(PROMPT, tmp / "rec.wav")
        shutil.copy(VOICE, tmp / "v.safetensors")
        (tmp / "x").mkdir()
        (tmp / "link.wav").symlink_to("v.safetensors")
        before = tree(tmp)
        run = run_cli(["tts", "Hello.", *args, *MODEL, "-q"], tmp)
        problem = judge(run, {1, 2})
        if problem:
            return problem
        if tree(tmp) != before:
            return "a file changed although the run was refused"
        return None


for _label, _args in SAME_FILE.items():
    _same_file_case(_label, _args)

# An output onto a file of the run's model (a copy of the pack: a regression must not
# damage the committed one) or onto benchmark's inputs (fourth session).
ONTO_MODEL = {
    "tts --metrics onto the pack's pack.json": [
        *("tts", "Hello.", "--voice-file", "v.safetensors", "-o", "a.wav"),
        *("--metrics", "pk/pack.json"),
    ],
    "tts --save-voice onto a pack file": [
        *("tts", "Hello.", "--clone-voice", "rec.wav", "-o", "a.wav"),
        *("--save-voice", "pk/constants.safetensors"),
    ],
    "clone -o onto a pack file": ["clone", "rec.wav", "-o", "pk/constants.safetensors"],
    "benchmark --output-json onto --voice-file": [
        *("benchmark", "--corpus-path", "c.txt", "--skip-asr", "--voice-file", "v.safetensors"),
        *("--output-json", "v.safetensors"),
    ],
}


def _onto_model_case(label: str, args: list[str]) -> None:
    @SWEEP.add("one file as input and output (tts)", label)
    def body(tmp: Path) -> str | None:
        copy_pack(tmp / "pk")
        shutil.copy(PROMPT, tmp / "rec.wav")
        shutil.copy(VOICE, tmp / "v.safetensors")
        (tmp / "c.txt").write_text("Hello there.\n")
        before = tree(tmp)
        run = run_cli([*args, "--model-dir", "pk", "-q"], tmp)
        problem = judge(run, 2)
        if problem:
            return problem
        if tree(tmp) != before:
            return "a file changed although the run was refused"
        return None


for _label, _args in ONTO_MODEL.items():
    _onto_model_case(_label, _args)


# ------------------------------------------------------------------ group: configs

# the fixture's config, with the checkpoint beside it (each case copies it into its folder)
_BASE_CONFIG = CONFIG.read_text() + "weights_path: model.safetensors\n"


def _config_with(old: str, new: str) -> Callable[[], bytes]:
    def make() -> bytes:
        if old not in _BASE_CONFIG:
            raise AssertionError(f"config fixture has no {old!r}")
        return _BASE_CONFIG.replace(old, new, 1).encode()

    return make


CONFIGS: dict[str, Callable[[], bytes]] = {
    "control: the fixture unchanged (must work)": lambda: _BASE_CONFIG.encode(),
    "empty file": lambda: b"",
    "a list, not a mapping": lambda: b"- 1\n- 2\n",
    "a scalar": lambda: b"42\n",
    "not UTF-8": lambda: b"flow_lm: \xff\xfe\n",
    "NUL bytes": lambda: _BASE_CONFIG.encode() + b"\0\0",
    "tabs (invalid YAML)": lambda: b"flow_lm:\n\t d_model: 64\n",
    "flow nesting 10^5 deep": lambda: b"a: " + b"[" * 100000 + b"]" * 100000 + b"\n",
    "block nesting 3000 deep": lambda: (
        "".join(f"{' ' * i}k{i}:\n" for i in range(3000)).encode() + b" " * 3000 + b"x: 1\n"
    ),
    "flow nesting 5000 deep": lambda: b"a: " + nested_json(5000) + b"\n",
    "duplicate top-level key": lambda: _BASE_CONFIG.encode() + b"\nflow_lm: 7\n",
    "num_heads NaN": _config_with("num_heads: 4", "num_heads: .nan"),
    "d_model Inf": _config_with("d_model: 64", "d_model: .inf"),
    "d_model 1e400": _config_with("d_model: 64", "d_model: 1e400"),
    "num_layers -1": _config_with("num_layers: 2", "num_layers: -1"),
    "num_layers 2^64": _config_with("num_layers: 2", "num_layers: 18446744073709551616"),
    "num_layers true": _config_with("num_layers: 2", "num_layers: true"),
    "hidden_scale 10^6": _config_with("hidden_scale: 4", "hidden_scale: 1000000"),
    "max_period 0": _config_with("max_period: 10000", "max_period: 0"),
    "n_bins 10^10": _config_with("n_bins: 4000", "n_bins: 10000000000"),
    "frame_rate 0": _config_with("frame_rate: 12.5", "frame_rate: 0"),
    "frame_rate negative": _config_with("frame_rate: 12.5", "frame_rate: -12.5"),
    "sample_rate 10^12": _config_with("sample_rate: 24000", "sample_rate: 1000000000000"),
    "ratios empty": _config_with("    - 6\n    - 5\n    - 4\n", "    []\n"),
    "ratios with 0": _config_with("    - 6\n", "    - 0\n"),
    "ratios 10^4 entries": _config_with("    - 6\n", "    - 2\n" * 10000),
    "n_filters 10^7": _config_with("n_filters: 8", "n_filters: 10000000"),
    "flow depth 10^8": _config_with("depth: 2", "depth: 100000000"),
    "tokenizer_path absolute": _config_with(
        "tokenizer_path: tokenizer.model", "tokenizer_path: /etc/hostname"
    ),
    "tokenizer_path a folder": _config_with(
        "tokenizer_path: tokenizer.model", "tokenizer_path: /tmp"
    ),
    "tokenizer_path /dev/zero": _config_with(
        "tokenizer_path: tokenizer.model", "tokenizer_path: /dev/zero"
    ),
    "tokenizer_path file:// URL": _config_with(
        "tokenizer_path: tokenizer.model", "tokenizer_path: file:///etc/passwd"
    ),
    "tokenizer unknown kind": _config_with("tokenizer: sentencepiece", "tokenizer: evil"),
    "set-typed value (!!set)": _config_with("num_layers: 2", "num_layers: !!set {a, b}"),
    "binary value (!!binary)": _config_with("num_layers: 2", "num_layers: !!binary aGVsbG8="),
    "timestamp value": _config_with("num_layers: 2", "num_layers: 2001-12-14t21:59:43.10-05:00"),
    "merge key <<": lambda: b"base: &b {d_model: 64}\nflow_lm:\n  <<: *b\n" + _BASE_CONFIG.encode(),
    "a 50 MB scalar": lambda: b"x: " + b"a" * (50 << 20) + b"\n" + _BASE_CONFIG.encode(),
}


def _config_case(label: str, make: Callable[[], bytes]) -> None:
    for cmd in ("tts", "export"):

        @SWEEP.add(f"configs (--config, {cmd})", label)
        def body(tmp: Path, cmd: str = cmd) -> str | None:
            (tmp / "c.yaml").write_bytes(make())
            shutil.copy(TINY / "model.safetensors", tmp / "model.safetensors")
            shutil.copy(PACK / "tokenizer.model", tmp / "tokenizer.model")
            if cmd == "tts":
                argv = [
                    *("tts", "hi", "-o", "o.wav", "-q", "--config", "c.yaml", "--offline"),
                    *("--voice-file", str(VOICE)),
                ]
            else:
                argv = [
                    *("export", "--format", "web", "out", "--config", "c.yaml", "-q"),
                    *("--offline", "--voice-clip", str(PROMPT)),
                ]
            run = run_cli(argv, tmp, timeout=180)
            problem = judge(run, {0} if label.startswith("control") else {0, 1, 2})
            if problem:
                return problem
            if run.rc == 0 and "tokenizer_path" in label:
                shipped = b"".join(p.read_bytes() for p in (tmp / "out").rglob("tokenizer*"))
                if b"root:" in shipped or Path("/etc/hostname").read_bytes() in shipped:
                    return "a local file outside the config's folder was shipped"
            return None


for _label, _make in CONFIGS.items():
    _config_case(_label, _make)


def _config_special(label: str, make: Callable[[Path], str]) -> None:
    @SWEEP.add("configs (special paths)", label)
    def body(tmp: Path) -> str | None:
        arg = make(tmp)
        run = run_cli(
            ["tts", "hi", "-o", "o.wav", "-q", "--config", arg, "--offline"], tmp, timeout=30
        )
        return judge(run, {1, 2})


_config_special("a folder", lambda t: (t / "c").mkdir() or "c")
_config_special("a FIFO", lambda t: os.mkfifo(t / "c.yaml") or "c.yaml")
_config_special("/dev/zero", lambda t: "/dev/zero")
_config_special("/dev/urandom", lambda t: "/dev/urandom")
_config_special("missing", lambda t: "nope.yaml")
_config_special("ftp:// URL", lambda t: "ftp://example.invalid/c.yaml")
_config_special("file:// URL", lambda t: "file:///etc/passwd")
_config_special("hf:// with .. in it", lambda t: "hf://a/b/../../../etc/passwd")
_config_special("https:// offline", lambda t: "https://127.0.0.1:1/c.yaml")
_config_special("empty string", lambda t: "")


# -------------------------------------------------------------------- group: packs


def _pack_json_edit(edit: Callable[[dict], object]) -> Callable[[Path], None]:
    def make(pack: Path) -> None:
        doc = json.loads((pack / "pack.json").read_text())
        result = edit(doc)
        (pack / "pack.json").write_text(json.dumps(doc) if result is None else str(result))

    return make


def _unsealed(edit: Callable[[dict], object]) -> Callable[[Path], None]:
    """pack.json edited, and its seal (its own sha256 in ``files``) taken away with the rest."""

    def both(doc: dict) -> None:
        doc["files"] = {}
        edit(doc)

    return _pack_json_edit(both)


def _replace(name: str, data: bytes) -> Callable[[Path], None]:
    def make(pack: Path) -> None:
        target = pack / name
        target.unlink()
        target.write_bytes(data)

    return make


def _symlink(name: str, to: str) -> Callable[[Path], None]:
    def make(pack: Path) -> None:
        (pack / name).unlink()
        (pack / name).symlink_to(to)

    return make


PACKS: dict[str, Callable[[Path], None]] = {
    "control: the copy unchanged (must work)": lambda p: None,
    "pack.json empty": _replace("pack.json", b""),
    "pack.json deeply nested": _replace("pack.json", nested_json(200000)),
    "pack.json nested 5000 deep": _replace("pack.json", nested_json(5000)),
    "pack.json not UTF-8": _replace("pack.json", b'{"format": "\xff"}'),
    "pack.json a list": _replace("pack.json", b"[1,2,3]"),
    "pack.json NaN literal": _pack_json_edit(
        lambda d: json.dumps(d).replace('"default_temperature": 0.3', '"default_temperature": NaN')
    ),
    "pack.json duplicate config key": _pack_json_edit(
        lambda d: json.dumps(d)[:-1] + ', "config": {"flow_lm": 1}}'
    ),
    "pack.json version 99": _pack_json_edit(lambda d: d.__setitem__("version", 99)),
    "pack.json version string": _pack_json_edit(lambda d: d.__setitem__("version", "2")),
    "pack.json graph path escapes": _pack_json_edit(
        lambda d: d["graphs"]["fp32"].__setitem__("flow_head", "../../../../etc/passwd")
    ),
    "pack.json graph path absolute": _pack_json_edit(
        lambda d: d["graphs"]["fp32"].__setitem__("flow_head", "/etc/passwd")
    ),
    # an unsealed pack.json (as packs before the seal) is read, its numbers bounded:
    "pack.json unsealed, num_layers 100000": _unsealed(
        lambda d: d["config"]["flow_lm"]["transformer"].__setitem__("num_layers", 100000)
    ),
    "pack.json unsealed, mimi state [1,16,10^9]": _unsealed(
        lambda d: d["mimi_states"][0].__setitem__("shape", [1, 16, 10**9])
    ),
    "pack.json unsealed, d_model 65": _unsealed(
        lambda d: d["config"]["flow_lm"]["transformer"].__setitem__("d_model", 65)
    ),
    "pack.json unsealed, graphs swapped": _unsealed(
        lambda d: d["graphs"]["fp32"].__setitem__("flowlm_step_batch", "mimi_decoder.onnx")
    ),
    "pack.json mimi state negative": _pack_json_edit(
        lambda d: d["mimi_states"][0].__setitem__("shape", [1, -16, 64])
    ),
    "pack.json mimi state dtype object": _pack_json_edit(
        lambda d: d["mimi_states"][0].__setitem__("dtype", "object")
    ),
    "pack.json tokenizer file escapes": _pack_json_edit(
        lambda d: d["tokenizer"].__setitem__("file", "../../../../etc/passwd")
    ),
    "pack.json a folder": lambda p: ((p / "pack.json").unlink(), (p / "pack.json").mkdir()),
    "pack.json a FIFO": lambda p: ((p / "pack.json").unlink(), os.mkfifo(p / "pack.json")),
    "pack.json symlink to /dev/zero": _symlink("pack.json", "/dev/zero"),
    "pack.json missing": lambda p: (p / "pack.json").unlink(),
    "graph truncated": lambda p: (p / "flowlm_step.onnx.data").write_bytes(
        (p / "flowlm_step.onnx.data").read_bytes()[:100]
    ),
    "graph symlink to /dev/zero": _symlink("flowlm_step.onnx", "/dev/zero"),
    "graph a FIFO": lambda p: (
        (p / "mimi_decoder.onnx").unlink(),
        os.mkfifo(p / "mimi_decoder.onnx"),
    ),
    "graph a folder": lambda p: ((p / "flow_head.onnx").unlink(), (p / "flow_head.onnx").mkdir()),
    "external data symlinked out": _symlink("flow_head.onnx.data", "/etc/passwd"),
    "tokenizer garbage": _replace("tokenizer.model", os.urandom(4096)),
    "tokenizer zero bytes": _replace("tokenizer.model", b""),
    "constants header claim 2^60": _replace(
        "constants.safetensors", safetensors_bytes(b"{}", claim=1 << 60)
    ),
    "every file mode 000": lambda p: [f.chmod(0) for f in p.iterdir()],
}


def _pack_case(label: str, make: Callable[[Path], None]) -> None:
    for cmd in ("tts", "voices"):

        @SWEEP.add(f"packs (--model-dir, {cmd})", label)
        def body(tmp: Path, cmd: str = cmd) -> str | None:
            pack = copy_pack(tmp / "pack")
            make(pack)
            argv = (
                [
                    "tts",
                    "hi",
                    "-o",
                    "o.wav",
                    "-q",
                    "--model-dir",
                    "pack",
                    "--voice-file",
                    str(VOICE),
                ]
                if cmd == "tts"
                else ["voices", "--model-dir", "pack"]
            )
            run = run_cli(argv, tmp, timeout=60)
            try:
                if label.startswith("control"):
                    return judge(run, 0)
                if label == "every file mode 000":
                    return judge(run, {0, 1, 2})
                return judge(run, {1, 2} if cmd == "tts" else {0, 1, 2})
            finally:
                for f in pack.iterdir():
                    with contextlib.suppress(OSError):
                        f.chmod(0o644)


for _label, _make in PACKS.items():
    _pack_case(_label, _make)


def _model_dir_special(label: str, make: Callable[[Path], str]) -> None:
    @SWEEP.add("packs (--model-dir special paths)", label)
    def body(tmp: Path) -> str | None:
        arg = make(tmp)
        run = run_cli(["tts", "hi", "-o", "o.wav", "-q", "--model-dir", arg], tmp, timeout=30)
        return judge(run, {1, 2})


_model_dir_special("a file", lambda t: ((t / "f").write_text("x"), "f")[1])
_model_dir_special("a FIFO", lambda t: os.mkfifo(t / "f") or "f")
_model_dir_special("an empty folder", lambda t: (t / "d").mkdir() or "d")
_model_dir_special("a dangling symlink", lambda t: (t / "d").symlink_to("gone") or "d")
_model_dir_special("/dev", lambda t: "/dev")
_model_dir_special("/proc/self", lambda t: "/proc/self")
_model_dir_special("a URL", lambda t: "https://example.invalid/pack")


def _many_files(tmp: Path) -> str:
    (tmp / "d").mkdir()
    for i in range(5000):
        (tmp / "d" / f"f{i}.onnx").touch()
    return "d"


_model_dir_special("a folder of 5000 empty files", _many_files)


# ---------------------------------------------------- group: KevinAHM bundles, browser packs

_EXPORTS: dict[str, Path] = {}


def exported(kind: str, scratch: Path) -> Path:
    """The tiny model exported once per run as a KevinAHM v2 bundle or a browser pack."""
    if kind not in _EXPORTS:
        work = scratch / f"export-{kind}"
        work.mkdir()
        (work / "c.yaml").write_text(_BASE_CONFIG)
        shutil.copy(TINY / "model.safetensors", work / "model.safetensors")
        shutil.copy(PACK / "tokenizer.model", work / "tokenizer.model")
        fmt = ["--format", "kevinahm-v2"] if kind == "kevinahm" else ["--format", "web"]
        clip = ["--voice-clip", str(PROMPT)] if kind == "web" else []
        run = run_cli(["export", *fmt, "out", "--config", "c.yaml", "-q", "--offline", *clip], work)
        if run.rc != 0:
            raise RuntimeError(f"export {kind} failed: {run.err[-300:]}")
        _EXPORTS[kind] = work / "out"
    return _EXPORTS[kind]


def _json_edit(name: str, edit: Callable[[dict], object]) -> Callable[[Path], None]:
    def make(folder: Path) -> None:
        doc = json.loads((folder / name).read_text())
        result = edit(doc)
        (folder / name).write_text(json.dumps(doc) if result is None else str(result))

    return make


def _set(path: tuple, value: object) -> Callable[[dict], None]:
    def edit(doc: dict) -> None:
        target = doc
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return edit


BUNDLES: dict[str, tuple[str, Callable[[Path], None]]] = {
    "control: unchanged (must work)": ("kevinahm", lambda f: None),
    "bundle.json nested 5000 deep": (
        "kevinahm",
        lambda f: (f / "bundle.json").write_bytes(nested_json(5000)),
    ),  # fmt: skip
    "bundle.json not JSON": ("kevinahm", lambda f: (f / "bundle.json").write_bytes(b"{\xff")),
    "bundle.json a list": ("kevinahm", lambda f: (f / "bundle.json").write_text("[]")),
    "bundle.json conditioning_dim 10^9": (
        "kevinahm",
        _json_edit("bundle.json", _set(("conditioning_dim",), 10**9)),
    ),  # fmt: skip
    "bundle.json sample_rate 0": (
        "kevinahm",
        _json_edit("bundle.json", _set(("sample_rate",), 0)),
    ),  # fmt: skip
    "bundle.json samples_per_frame -1920": (
        "kevinahm",
        _json_edit("bundle.json", _set(("samples_per_frame",), -1920)),
    ),  # fmt: skip
    "bundle.json state shape [2,1,10^9,4,16]": (
        "kevinahm",
        _json_edit(
            "bundle.json",
            lambda d: d["flow_lm_state_manifest"][0].__setitem__("shape", [2, 1, 10**9, 4, 16]),
        ),
    ),  # fmt: skip
    "bundle.json state dtype complex": (
        "kevinahm",
        _json_edit(
            "bundle.json",
            lambda d: d["flow_lm_state_manifest"][0].__setitem__("dtype", "complex128"),
        ),
    ),  # fmt: skip
    "bundle.json tokenizer_file escapes": (
        "kevinahm",
        _json_edit("bundle.json", _set(("tokenizer_file",), "../../../etc/passwd")),
    ),
    "bundle.json bos file absolute": (
        "kevinahm",
        _json_edit("bundle.json", _set(("bos_before_voice_file",), "/etc/passwd")),
    ),
    "bundle.json predefined voice escapes (never read as a path)": (
        "kevinahm",
        _json_edit("bundle.json", _set(("predefined_voices",), {"x": "../../../../etc/passwd"})),
    ),  # fmt: skip
    "bundle.json schema_version 999": (
        "kevinahm",
        _json_edit("bundle.json", _set(("schema_version",), 999)),
    ),  # fmt: skip
    "bos_before_voice.npy pickled (not read: the sidecar config)": (
        "kevinahm",
        lambda f: (f / "bos_before_voice.npy").write_bytes(
            npy_bytes("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", b"\x80\x04N.")
        ),
    ),
    "bos_before_voice.npy huge claim (not read)": (
        "kevinahm",
        lambda f: (f / "bos_before_voice.npy").write_bytes(
            npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 4000000000), }")
        ),
    ),
    "pockettts.json nested 5000 deep": (
        "kevinahm",
        lambda f: (f / "pockettts.json").write_bytes(nested_json(5000)),
    ),  # fmt: skip
    "pockettts.json num_layers 10^6": (
        "kevinahm",
        _json_edit(
            "pockettts.json",
            lambda d: d["config"]["flow_lm"]["transformer"].__setitem__("num_layers", 10**6),
        ),
    ),  # fmt: skip
    "pockettts.json missing": ("kevinahm", lambda f: (f / "pockettts.json").unlink()),
    "graph swapped (flow is the decoder)": (
        "kevinahm",
        lambda f: shutil.copy(f / "mimi_decoder.onnx", f / "flow_lm_flow.onnx"),
    ),  # fmt: skip
    "web control: unchanged (must work)": ("web", lambda f: None),
    "pocket_tts.json nested 5000 deep": (
        "web",
        lambda f: (f / "pocket_tts.json").write_bytes(nested_json(5000)),
    ),  # fmt: skip
    "pocket_tts.json top-level num_layers 10^6 (not read)": (
        "web",
        _json_edit("pocket_tts.json", _set(("num_layers",), 10**6)),
    ),  # fmt: skip
    "pocket_tts.json top-level head_dim 0 (not read)": (
        "web",
        _json_edit("pocket_tts.json", _set(("head_dim",), 0)),
    ),
    "pocket_tts.json NaN temperature (not read)": (
        "web",
        _json_edit(
            "pocket_tts.json",
            lambda d: json.dumps(d).replace('"temperature": 0.3', '"temperature": NaN'),
        ),
    ),  # fmt: skip
    "pocket_tts.json voice file escapes (never read as a path)": (
        "web",
        _json_edit(
            "pocket_tts.json",
            lambda d: d["voices"]["alba"].__setitem__("file", "../../../../etc/passwd"),
        ),
    ),  # fmt: skip
    "pocket_tts.json voice shape [10^9, 64]": (
        "web",
        _json_edit(
            "pocket_tts.json", lambda d: d["voices"]["alba"].__setitem__("shape", [10**9, 64])
        ),
    ),  # fmt: skip
    "pocket_tts.json bos_emb absolute (never read as a path)": (
        "web",
        _json_edit("pocket_tts.json", lambda d: d["bos_emb"].__setitem__("file", "/etc/passwd")),
    ),  # fmt: skip
    "pocket_tts.json mimi state [1,16,10^9]": (
        "web",
        _json_edit(
            "pocket_tts.json", lambda d: d["mimi_state"][0].__setitem__("shape", [1, 16, 10**9])
        ),
    ),  # fmt: skip
    "pocket_tts.json config num_layers 10^6": (
        "web",
        _json_edit(
            "pocket_tts.json",
            lambda d: d["config"]["flow_lm"]["transformer"].__setitem__("num_layers", 10**6),
        ),
    ),  # fmt: skip
    "pocket_tts.json config num_heads 0": (
        "web",
        _json_edit(
            "pocket_tts.json",
            lambda d: d["config"]["flow_lm"]["transformer"].__setitem__("num_heads", 0),
        ),
    ),  # fmt: skip
    "pocket_tts.json config a list": (
        "web",
        _json_edit("pocket_tts.json", _set(("config",), [1, 2])),
    ),  # fmt: skip
    "pocket_tts.json decode_steps 10^9": (
        "web",
        _json_edit("pocket_tts.json", _set(("decode_steps",), 10**9)),
    ),  # fmt: skip
    "pocket_tts.json tokenizer_file escapes": (
        "web",
        _json_edit("pocket_tts.json", _set(("tokenizer_file",), "../../etc/passwd")),
    ),
    "voice_alba.bin truncated": ("web", lambda f: (f / "voice_alba.bin").write_bytes(b"\0" * 7)),
    "tokenizer.json nested 5000 deep": (
        "web",
        lambda f: (f / "tokenizer.json").write_bytes(nested_json(5000)),
    ),  # fmt: skip
    "tokenizer.json not JSON": ("web", lambda f: (f / "tokenizer.json").write_bytes(b"\x00\xff")),
}


def _bundle_case(label: str, kind: str, make: Callable[[Path], None]) -> None:
    @SWEEP.add(f"bundles and browser packs (--model-dir, tts; {kind})", label)
    def body(tmp: Path) -> str | None:
        folder = tmp / "m"
        shutil.copytree(exported(kind, tmp.parent), folder)
        make(folder)
        voice = [] if kind == "web" else ["--voice-file", str(VOICE)]
        run = run_cli(["tts", "hi", "-o", "o.wav", "-q", "--model-dir", "m", *voice], tmp)
        problem = judge(run, 0 if "control" in label else {0, 1, 2})
        if problem:
            return problem
        if run.rc == 0 and "control" in label:
            return wav_ok(tmp / "o.wav")
        if run.rc == 0 and "not read" in label or "never read" in label:
            return wav_ok(tmp / "o.wav") if run.rc == 0 else None
        if run.rc == 0 and "control" not in label and "missing" not in label:
            return f"exit 0: the edited file was believed or not read ({wav_ok(tmp / 'o.wav')})"
        return None


for _label, (_kind, _make) in BUNDLES.items():
    _bundle_case(_label, _kind, _make)


# ----------------------------------------------------------------- servers: harness


STARTED: list[Server] = []  # stopped at the end of the run, whichever cases ran


class Server:
    """A front end as a user runs it; its stderr kept on a thread."""

    def __init__(self, argv: list[str], cwd: Path, stdin: bool = False) -> None:
        self.proc = subprocess.Popen(
            [*CLI, *argv],
            cwd=cwd,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=user_env(),
            start_new_session=True,
        )
        self.lines: list[str] = []
        self.cond = threading.Condition()
        threading.Thread(target=self._drain, daemon=True).start()
        STARTED.append(self)

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            with self.cond:
                self.lines.append(raw.decode("utf-8", "replace").rstrip("\n"))
                self.cond.notify_all()
        with self.cond:
            self.lines.append("<eof>")
            self.cond.notify_all()

    def wait_event(self, name: str, timeout: float = 60) -> dict:
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for line in self.lines:
                    if line.startswith("{") and json.loads(line).get("event") == name:
                        return json.loads(line)
                if "<eof>" in self.lines or time.monotonic() > deadline:
                    raise RuntimeError(f"no {name!r} event: {self.lines[-5:]}")
                self.cond.wait(0.5)

    def status(self) -> tuple[float, int]:
        """Resident MB and threads now."""
        text = Path(f"/proc/{self.proc.pid}/status").read_text()
        rss = int(re.search(r"VmRSS:\s+(\d+)", text).group(1)) / 1024  # type: ignore[union-attr]
        threads = int(re.search(r"Threads:\s+(\d+)", text).group(1))  # type: ignore[union-attr]
        return rss, threads

    def log_problem(self) -> str | None:
        """A traceback, a line that is not JSON, or an error no handler of ours caught."""
        for line in self.lines:
            if line == "<eof>" or not line.strip():
                continue
            if "Traceback" in line:
                return f"traceback in the log: {line[:200]}"
            if not line.startswith("{"):
                return f"a line that is not JSON in the log: {line[:200]!r}"
            entry = json.loads(line)
            if entry.get("level") in ("error", "critical") and not str(
                entry.get("logger", "")
            ).startswith("pockettts"):
                return f"an uncaught error: {line[:300]}"
            if "Unhandled" in str(entry.get("event")) or "Exception in" in str(entry.get("event")):
                return f"an uncaught error: {line[:300]}"
        return None

    def stop(self) -> int | None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            return None


Probe = Callable[[], str | None]


def _server_group(
    group: str, start: Callable[[Path], tuple[Server, object]], probes: dict[str, Callable]
) -> None:
    """One server for the group; each probe a case; after them: alive, bounded, no traceback."""
    state: dict[str, object] = {}

    def ensure(tmp: Path) -> tuple[Server, object]:
        if "server" not in state:
            server, handle = start(tmp)
            state["server"], state["handle"] = server, handle
            state["baseline"] = server.status()
        return state["server"], state["handle"]  # type: ignore[return-value]

    for name, probe in probes.items():

        @SWEEP.add(group, name)
        def body(tmp: Path, probe: Callable = probe) -> str | None:
            server, handle = ensure(tmp)
            if server.proc.poll() is not None:
                return f"the server had ended (exit {server.proc.returncode})"
            try:
                return probe(handle, tmp)
            except Exception as exc:  # the probe's own client failing is a finding too
                return f"client saw {type(exc).__name__}: {exc}"[:300]

    @SWEEP.add(group, "after every probe: alive, bounded, no traceback, clean stop")
    def after(tmp: Path) -> str | None:
        server, handle = ensure(tmp)
        if server.proc.poll() is not None:
            return f"the server had ended (exit {server.proc.returncode})"
        rss0, threads0 = state["baseline"]  # type: ignore[misc]
        time.sleep(2)  # abandoned connections' timeouts
        rss, threads = server.status()
        alive = probes_alive.get(group)
        problem = alive(handle) if alive else None
        rc = server.stop()
        state.clear()
        if problem:
            return f"after the probes: {problem}"
        if rss > rss0 + 400:
            return f"memory grew from {rss0:.0f} to {rss:.0f} MB"
        if threads > threads0 + 16:
            return f"threads grew from {threads0} to {threads}"
        problem = server.log_problem()
        if problem:
            return f"server log: {problem}"
        if rc not in (0, None, 128 + signal.SIGTERM, -signal.SIGTERM):
            return f"stopped with exit {rc}"
        if rc is None:
            return "did not stop on SIGTERM within 30 s"
        return None


probes_alive: dict[str, Callable[[object], str | None]] = {}


def recv_all(sock: socket.socket, timeout: float = 30) -> bytes:
    sock.settimeout(timeout)
    chunks = []
    with contextlib.suppress(ConnectionResetError):
        while True:
            data = sock.recv(65536)
            if not data:
                break
            chunks.append(data)
    return b"".join(chunks)


# ------------------------------------------------------------------ servers: HTTP


def hostile_voice_dir(tmp: Path) -> None:
    """A --voice-dir holding what should never be read as a voice, nor waited on."""
    voices = tmp / "voices"
    voices.mkdir()
    shutil.copy(VOICE, voices / "good.safetensors")
    (voices / "model.safetensors").write_bytes(b"\0" * 64)
    (voices / "bad.npy").write_bytes(npy_bytes("{'descr': '|O', 'shape': (2,), }"))
    os.mkfifo(voices / "fifo.safetensors")
    (voices / "loop.safetensors").symlink_to("loop.safetensors")
    (voices / "dangling.safetensors").symlink_to("/nonexistent/x.safetensors")
    (voices / "zero.safetensors").symlink_to("/dev/zero")
    (voices / "huge.npy").write_bytes(
        npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 4000000000, 64), }")
    )
    (voices / "dir.safetensors").mkdir()
    (voices / "passwd.safetensors").symlink_to("/etc/passwd")


def _start_http(tmp: Path) -> tuple[Server, int]:
    hostile_voice_dir(tmp)
    server = Server(
        ["serve", "--port", "0", *VOICED, "--voice-dir", "voices", "--header-timeout", "3",
         "--body-timeout", "3", "--idle-timeout", "3", "--log-level", "info"],
        tmp,
    )  # fmt: skip
    port = server.wait_event("listening")["port"]
    return server, wait_ready(port)


def wait_ready(port: int, timeout: float = 60) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            status, _ = raw_http(
                port, b"GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            )
            if status == 200:
                return port
        time.sleep(0.2)
    raise RuntimeError("the server never became ready")


def raw_http(port: int, data: bytes, timeout: float = 30) -> tuple[int | None, bytes]:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            s.sendall(data)
        body = recv_all(s, timeout)
    m = re.match(rb"HTTP/1\.[01] (\d{3})", body)
    return (int(m.group(1)) if m else None), body


def post(port: int, path: str, body: bytes, ctype: str = "application/json") -> bytes:
    head = (
        f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: {ctype}\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()
    return head + body


def _http_expect(data: bytes | Callable[[], bytes], statuses: set[int] | None = None) -> Callable:
    """A request; the answer a status in ``statuses`` (any 4xx when None), no traceback."""

    def probe(port: int, tmp: Path) -> str | None:
        status, body = raw_http(port, data() if callable(data) else data)
        if status is None:
            return f"no HTTP answer: {body[:120]!r}"
        ok = statuses if statuses is not None else set(range(400, 500))
        if status not in ok:
            return f"status {status}: {body[-300:]!r}"
        return shown_problem(body.decode("utf-8", "replace"))

    return probe


def _speech(**fields: object) -> bytes:
    return json.dumps({"model": "tts-1", "input": "hello", "voice": "voice", **fields}).encode()


def _slow_headers(port: int, tmp: Path) -> str | None:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        start = time.monotonic()
        s.sendall(b"POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\n")
        with contextlib.suppress(OSError):
            for _ in range(20):
                s.sendall(b"X-A: b\r\n")
                time.sleep(0.5)
        s.settimeout(15)
        with contextlib.suppress(OSError):
            s.recv(100)
        if time.monotonic() - start > 9.5 + 15:
            return "a trickled header kept the connection past --header-timeout"
    return None


def _abandoned_body(port: int, tmp: Path) -> str | None:
    for _ in range(20):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(post(port, "/v1/audio/speech", b"")[:-4].replace(b"Length: 0", b"Length: 900")
                  + b"\r\n\r\n" + b'{"input": "')  # fmt: skip
        s.close()
    return None


def _abandoned_sse(port: int, tmp: Path) -> str | None:
    for _ in range(8):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(post(port, "/v1/audio/speech", _speech(input="word " * 300, stream_format="sse")))
        s.recv(200)
        s.close()
    return None


def _abandoned_stream(port: int, tmp: Path) -> str | None:
    for fmt in ("wav", "mp3", "opus", "flac", "pcm"):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(post(port, "/v1/audio/speech", _speech(input="word " * 300, response_format=fmt)))
        s.recv(100)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # RST
        s.close()
    return None


def _multipart(parts: list[tuple[str, str | None, bytes]], boundary: str = "XyZ") -> bytes:
    out = b""
    for name, filename, data in parts:
        disp = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
        out += f"--{boundary}\r\nContent-Disposition: {disp}\r\n\r\n".encode() + data + b"\r\n"
    return out + f"--{boundary}--\r\n".encode()


def _upload(data: bytes, filename: str = "a.wav", name: str = "file") -> bytes:
    body = _multipart([(name, filename, data)])
    return post(0, "/v1/voices", body, "multipart/form-data; boundary=XyZ")


def _http_alive(port: object) -> str | None:
    status, body = raw_http(int(port), post(0, "/v1/audio/speech", _speech()))  # type: ignore[arg-type]
    if status != 200:
        return f"a plain request got {status}: {body[-200:]!r}"
    return None


probes_alive["HTTP server (serve)"] = _http_alive

HTTP_PROBES: dict[str, Callable] = {
    "body JSON nested 10^5 deep": _http_expect(
        post(0, "/v1/audio/speech", b'{"input": ' + nested_json(100000) + b"}")
    ),
    "body 'input' nested 10^5 deep (array only)": _http_expect(
        post(0, "/v1/audio/speech", nested_json(100000))
    ),
    "body nested 5000 deep (10 kB)": _http_expect(post(0, "/v1/audio/speech", nested_json(5000))),
    "body not UTF-8": _http_expect(post(0, "/v1/audio/speech", b'{"input": "\xff\xfe"}')),
    "body NaN speed": _http_expect(post(0, "/v1/audio/speech", b'{"input":"hi","speed":NaN}')),
    "body Infinity temperature": _http_expect(
        post(0, "/v1/audio/speech", b'{"input":"hi","temperature":Infinity}')
    ),
    "body duplicate input keys": _http_expect(
        post(0, "/v1/audio/speech", b'{"input":"hi","input":["x"]}'), {200, 400, 422}
    ),
    "input is a list": _http_expect(post(0, "/v1/audio/speech", _speech(input=["a", "b"]))),
    "input is 10^6 chars": _http_expect(post(0, "/v1/audio/speech", _speech(input="a" * 10**6))),
    "input with NUL": _http_expect(post(0, "/v1/audio/speech", _speech(input="a\0b")), {200, 400}),
    "input only a lone surrogate": _http_expect(
        post(0, "/v1/audio/speech", b'{"input":"\\ud800","voice":"voice"}'), {200, 400}
    ),
    "voice /etc/passwd": _http_expect(post(0, "/v1/audio/speech", _speech(voice="/etc/passwd"))),
    "voice ../voices/bad": _http_expect(
        post(0, "/v1/audio/speech", _speech(voice="../voices/bad"))
    ),
    "voice file:// URL": _http_expect(
        post(0, "/v1/audio/speech", _speech(voice="file:///etc/passwd"))
    ),
    "voice https:// URL": _http_expect(
        post(0, "/v1/audio/speech", _speech(voice="https://127.0.0.1:1/v.safetensors"))
    ),
    "voice 'model' (a damaged file in --voice-dir: the server's fault, 500)": _http_expect(
        post(0, "/v1/audio/speech", _speech(voice="model")), {400, 404, 500}
    ),
    "voice 'bad' (a pickled .npy in --voice-dir)": _http_expect(
        post(0, "/v1/audio/speech", _speech(voice="bad"))
    ),
    "voice-dir 'fifo' named": _http_expect(
        post(0, "/v1/audio/speech", _speech(voice="fifo")), {400, 404, 500}
    ),
    "voice-dir 'loop' named": _http_expect(
        post(0, "/v1/audio/speech", _speech(voice="loop")), {400, 404, 500}
    ),
    "voice-dir 'dangling' named": _http_expect(
        post(0, "/v1/audio/speech", _speech(voice="dangling")), {400, 404, 500}
    ),
    "voice-dir 'zero' named": _http_expect(
        post(0, "/v1/audio/speech", _speech(voice="zero")), {400, 404, 500}
    ),
    "voice-dir 'huge' named": _http_expect(
        post(0, "/v1/audio/speech", _speech(voice="huge")), {400, 404, 500}
    ),
    "voice-dir 'dir' named": _http_expect(
        post(0, "/v1/audio/speech", _speech(voice="dir")), {400, 404, 500}
    ),
    "voice-dir 'passwd' named": _http_expect(
        post(0, "/v1/audio/speech", _speech(voice="passwd")), {400, 404, 500}
    ),
    "voice-dir listing (GET /v1/voices)": _http_expect(
        b"GET /v1/voices HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", {200}
    ),
    "voice-dir 'good' speaks": _http_expect(
        post(0, "/v1/audio/speech", _speech(voice="good")), {200}
    ),
    "SSE with response_format wav": _http_expect(
        post(0, "/v1/audio/speech", _speech(stream_format="sse", response_format="wav")),
        {200, 400},
    ),
    "SSE with response_format mp3": _http_expect(
        post(0, "/v1/audio/speech", _speech(stream_format="sse", response_format="mp3")),
        {200, 400},
    ),
    "SSE with response_format opus": _http_expect(
        post(0, "/v1/audio/speech", _speech(stream_format="sse", response_format="opus")),
        {200, 400},
    ),
    "SSE with response_format flac": _http_expect(
        post(0, "/v1/audio/speech", _speech(stream_format="sse", response_format="flac")),
        {200, 400},
    ),
    "SSE with response_format pcm": _http_expect(
        post(0, "/v1/audio/speech", _speech(stream_format="sse", response_format="pcm")),
        {200, 400},
    ),
    "SSE with response_format aac": _http_expect(
        post(0, "/v1/audio/speech", _speech(stream_format="sse", response_format="aac")),
        {200, 400},
    ),
    "voice an object": _http_expect(post(0, "/v1/audio/speech", _speech(voice={"id": "x"}))),
    "response_format ../../x": _http_expect(
        post(0, "/v1/audio/speech", _speech(response_format="../../x"))
    ),
    "seed -1": _http_expect(post(0, "/v1/audio/speech", _speech(seed=-1))),
    "seed 1e309 (float overflow)": _http_expect(
        post(0, "/v1/audio/speech", b'{"input":"hi","voice":"voice","seed":1e309}')
    ),
    "seed 10^400 (a 400-digit integer)": _http_expect(
        post(0, "/v1/audio/speech", b'{"input":"hi","voice":"voice","seed":1' + b"0" * 400 + b"}")
    ),
    "seed 10^5000 digits": _http_expect(
        post(0, "/v1/audio/speech", b'{"input":"hi","voice":"voice","seed":1' + b"0" * 5000 + b"}")
    ),
    "speed 1e-300": _http_expect(
        post(0, "/v1/audio/speech", _speech(speed=1e-300)), {200, 400, 422}
    ),
    "stream_format an int": _http_expect(post(0, "/v1/audio/speech", _speech(stream_format=1))),
    "body a JSON string": _http_expect(post(0, "/v1/audio/speech", b'"hello"')),
    "body 2 MB of spaces": _http_expect(
        post(0, "/v1/audio/speech", b" " * (2 << 20) + _speech()), {200, 400, 413, 422}
    ),
    "body 50 MB claimed, 10 bytes sent": _http_expect(
        b"POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b'Content-Length: 52428800\r\n\r\n{"input":',
        {408, 413, 400},
    ),
    "Content-Length negative": _http_expect(
        b"POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\nhello"
    ),
    "Content-Length 2^64": _http_expect(
        b"POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nContent-Length: 18446744073709551616\r\n\r\n"
    ),
    "two Content-Lengths": _http_expect(
        b"POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 9\r\n"
        b"\r\n{}"
    ),
    "chunked with a huge chunk size": _http_expect(
        b"POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
        b"Content-Type: application/json\r\n\r\nFFFFFFFFFFFFFFFF\r\n{}\r\n0\r\n\r\n",
        {400, 408, 413},
    ),
    "chunked body 40 MB": _http_expect(
        lambda: (
            b"POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
            b"Content-Type: application/json\r\n\r\n"
            + (b"100000\r\n" + b" " * 0x100000 + b"\r\n") * 40
            + b"0\r\n\r\n"
        ),
        {413, 400},
    ),
    "request line 200 kB": _http_expect(b"GET /" + b"a" * 200000 + b" HTTP/1.1\r\nHost: x\r\n\r\n"),
    "10^4 headers": _http_expect(
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
        + b"X-A: b\r\n" * 10000
        + b"\r\n",
        {200, 400, 431},
    ),
    "NUL in the path": _http_expect(b"GET /v1/models/\0 HTTP/1.1\r\nHost: x\r\n\r\n", {400, 404}),
    "model id ..%2f..%2fetc%2fpasswd": _http_expect(
        b"GET /v1/models/..%2f..%2fetc%2fpasswd HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        {404, 400},
    ),
    "DELETE /v1/voices/..%2fvoices%2fbad": _http_expect(
        b"DELETE /v1/voices/..%2fvoices%2fbad HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        {404, 400},
    ),
    "HTTP/0.9 request": _http_expect(b"GET /\r\n\r\n", None),
    "HTTP/2 preface": _http_expect(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", None),
    "TLS client hello": _http_expect(
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\0" * 64, None
    ),
    "unknown method": _http_expect(
        b"BREW /v1/audio/speech HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", {405, 404, 400}
    ),
    "form /tts with a 10^6-char text field": _http_expect(
        post(0, "/tts", b"text=" + b"a" * 10**6, "application/x-www-form-urlencoded")
    ),
    "form /tts with a file field instead of text": _http_expect(
        post(
            0,
            "/tts",
            _multipart([("text", "t.txt", b"hello")]),
            "multipart/form-data; boundary=XyZ",
        ),
        {200, 400, 422},  # fmt: skip
    ),
    "form /tts voice_url file://": _http_expect(
        post(
            0, "/tts", b"text=hi&voice_url=file:///etc/passwd", "application/x-www-form-urlencoded"
        )
    ),
    "upload: zero bytes": _http_expect(_upload(b"")),
    "upload: WAV claiming 65535 channels": _http_expect(
        _upload(wav_header(65535, 24000, 16, 0xFFFFFFF0) + b"\0" * 4096)
    ),
    "upload: WAV at 4 GHz": _http_expect(
        _upload(wav_header(1, 0xFFFFFFFF, 16, 4096) + b"\0" * 4096)
    ),
    "upload: NaN float WAV": _http_expect(
        _upload(wav_header(1, 24000, 32, 48000, 3) + np.full(12000, np.nan, "<f4").tobytes()),
        {200, 400, 422},
    ),
    "upload: MP3 garbage": _http_expect(_upload(DAMAGED_MP3, "a.mp3")),
    "upload: a safetensors voice": _http_expect(_upload(VOICE.read_bytes(), "v.safetensors")),
    "upload: filename ../../etc/passwd": _http_expect(
        _upload(wav_bytes(seconds=1.0), "../../../etc/passwd"), {200, 400}
    ),
    "upload: 30 MB": _http_expect(lambda: _upload(b"\0" * (30 << 20)), {413, 400}),
    "upload: no file part": _http_expect(
        post(0, "/v1/voices", _multipart([("x", None, b"1")]), "multipart/form-data; boundary=XyZ")
    ),
    "upload: 5000 parts": _http_expect(
        post(
            0,
            "/v1/voices",
            _multipart([("x", None, b"1")] * 5000),
            "multipart/form-data; boundary=XyZ",
        ),
        {400, 413, 422},  # fmt: skip
    ),
    "upload: boundary never closed": _http_expect(
        post(
            0,
            "/v1/voices",
            b'--XyZ\r\nContent-Disposition: form-data; name="file"; '
            b'filename="a.wav"\r\n\r\n' + b"\0" * 1000,
            "multipart/form-data; boundary=XyZ",
        )
    ),  # fmt: skip
    "upload: JSON instead of multipart": _http_expect(post(0, "/v1/voices", b'{"file": "a.wav"}')),
    "trickled headers (slowloris)": _slow_headers,
    "20 bodies abandoned half-sent": _abandoned_body,
    "8 SSE streams abandoned after the first bytes": _abandoned_sse,
    "5 streams (every format) reset mid-body": _abandoned_stream,
}
_server_group("HTTP server (serve)", _start_http, HTTP_PROBES)


# --------------------------------------------------------------- servers: websocket


def _ws(port: object, frames: list[str | bytes], *, want: str | None = "error",
        close_after: bool = False, timeout: float = 20) -> str | None:  # fmt: skip
    """Send frames on /tts/ws; the answer an error event (or a close), never a traceback."""
    import websockets

    async def go() -> str | None:
        seen: list[str] = []
        async with websockets.connect(
            f"ws://127.0.0.1:{port}/tts/ws", max_size=None, open_timeout=10
        ) as ws:
            for frame in frames:
                await ws.send(frame)
            if close_after:
                return None
            with contextlib.suppress(websockets.ConnectionClosed, TimeoutError):
                async with asyncio.timeout(timeout):
                    async for message in ws:
                        if isinstance(message, str):
                            seen.append(message)
                            problem = shown_problem(message)
                            if problem:
                                return f"{problem}: {message[:200]!r}"
                            if want and f'"{want}"' in message:
                                return None
            if want and not any(f'"{want}"' in m for m in seen) and ws.close_code in (None, 1000):
                return (
                    f"no {want!r} event (saw {[m[:80] for m in seen[-3:]]}, close {ws.close_code})"
                )
        return None

    return asyncio.run(go())


def _cfg(**data: object) -> str:
    return json.dumps({"type": "config", "data": data})


WS_PROBES: dict[str, Callable] = {
    "frame nested 10^5 deep": lambda p, t: _ws(p, [nested_json(100000).decode()]),
    "frame nested in data 10^5 deep": lambda p, t: _ws(
        p, ['{"type": "text", "data": ' + nested_json(100000).decode() + "}"]
    ),
    "frame nested 5000 deep (10 kB)": lambda p, t: _ws(p, [nested_json(5000).decode()]),
    "binary frame of random bytes": lambda p, t: _ws(p, [os.urandom(1000)]),
    "NaN sample_rate": lambda p, t: _ws(p, ['{"type":"config","data":{"sample_rate":NaN}}']),
    "sample_rate 10^9": lambda p, t: _ws(p, [_cfg(sample_rate=10**9)]),
    "sample_rate 1 (resample to 1 Hz)": lambda p, t: _ws(p, [_cfg(sample_rate=1)]),
    "voice /etc/passwd": lambda p, t: _ws(p, [_cfg(voice="/etc/passwd")]),
    "voice file:// URL": lambda p, t: _ws(p, [_cfg(voice="file:///etc/passwd")]),
    "seed 10^400": lambda p, t: _ws(p, ['{"type":"config","data":{"seed":1' + "0" * 400 + "}}"]),
    "text data a list": lambda p, t: _ws(p, [json.dumps({"type": "text", "data": ["a"]})]),
    "text field an object": lambda p, t: _ws(
        p, [json.dumps({"type": "text", "data": {"text": {"a": 1}}})]
    ),
    "type 10 kB long": lambda p, t: _ws(p, [json.dumps({"type": "x" * 10000, "data": {}})]),
    "flush without text": lambda p, t: _ws(
        p, [json.dumps({"type": "flush", "data": {}})], want=None
    ),  # fmt: skip
    "5000 text frames past max_chars": lambda p, t: _ws(
        p, [json.dumps({"type": "text", "data": {"text": "word " * 10}})] * 5000
    ),
    "2 MB frame": lambda p, t: _ws(p, ["x" * (2 << 20)], want=None),
    "12 sockets abandoned mid-turn": lambda p, t: [
        _ws(
            p,
            [json.dumps({"type": "text", "data": {"text": "word " * 200 + "."}})],
            close_after=True,
        )
        for _ in range(12)
    ][0],  # fmt: skip
}


def _start_ws(tmp: Path) -> tuple[Server, int]:
    server = Server(["serve", "--port", "0", *VOICED, "--log-level", "info"], tmp)
    return server, wait_ready(server.wait_event("listening")["port"])


probes_alive["websocket (serve /tts/ws)"] = lambda port: _ws(
    port,
    [_cfg(), json.dumps({"type": "text", "data": {"text": "hello."}}),
     json.dumps({"type": "flush", "data": {}})],
    want="final",
)  # fmt: skip
_server_group("websocket (serve /tts/ws)", _start_ws, WS_PROBES)


# ---------------------------------------------------------------- servers: Wyoming


def _wy(
    port: object, data: bytes, want: bytes | None = b"error", timeout: float = 20
) -> str | None:
    with socket.create_connection(("127.0.0.1", int(port)), timeout=timeout) as s:  # type: ignore[arg-type]
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            s.sendall(data)
        s.settimeout(timeout)
        got = b""
        with contextlib.suppress(TimeoutError, ConnectionResetError):
            while want is None or want not in got:
                chunk = s.recv(65536)
                if not chunk:
                    break
                got += chunk
    text = got.decode("utf-8", "replace")
    problem = shown_problem(text)
    if problem:
        return f"{problem}: {text[:200]!r}"
    if want is not None and want not in got:
        return f"no {want!r} answer (got {got[:160]!r})"
    return None


def _wy_event(kind: str, data: object = None, payload: bytes = b"", **header: object) -> bytes:
    raw = json.dumps(data).encode() if data is not None else b""
    head = {"type": kind, "version": "1.5.0", "data_length": len(raw) or None,
            "payload_length": len(payload) or None, **header}  # fmt: skip
    return json.dumps(head).encode() + b"\n" + raw + payload


WY_PROBES: dict[str, Callable] = {
    "header nested 10^5 deep": lambda p, t: _wy(p, nested_json(100000) + b"\n"),
    "data nested 10^5 deep": lambda p, t: _wy(
        p, b'{"type": "synthesize", "data_length": 200000}\n' + nested_json(100000)
    ),
    "header nested 5000 deep (10 kB)": lambda p, t: _wy(p, nested_json(5000) + b"\n"),
    "data nested 5000 deep (10 kB)": lambda p, t: _wy(
        p, b'{"type": "synthesize", "data_length": 10000}\n' + nested_json(5000)
    ),
    "header not UTF-8": lambda p, t: _wy(p, b'{"type": "\xff\xfe"}\n'),
    "header line of 2 MB without newline": lambda p, t: _wy(p, b'{"type": "' + b"a" * (2 << 20)),
    "data_length 2^63": lambda p, t: _wy(
        p, b'{"type": "synthesize", "data_length": 9223372036854775807}\n'
    ),
    "data_length a float": lambda p, t: _wy(p, b'{"type": "synthesize", "data_length": 1.5}\n'),
    "data_length NaN": lambda p, t: _wy(p, b'{"type": "synthesize", "data_length": NaN}\n'),
    "synthesize text a list": lambda p, t: _wy(p, _wy_event("synthesize", {"text": ["a"]})),
    "synthesize text 10^6 chars": lambda p, t: _wy(
        p, _wy_event("synthesize", {"text": "a" * 10**6})
    ),
    "synthesize voice /etc/passwd": lambda p, t: _wy(
        p, _wy_event("synthesize", {"text": "hi", "voice": {"name": "/etc/passwd"}})
    ),
    "synthesize voice a string, not an object": lambda p, t: _wy(
        p, _wy_event("synthesize", {"text": "hi", "voice": "x"})
    ),
    "synthesize voice 'model' (checkpoint in --voice-dir)": lambda p, t: _wy(
        p, _wy_event("synthesize", {"text": "hi", "voice": {"name": "model"}})
    ),
    "voice-dir 'fifo' named": lambda p, t: _wy(
        p, _wy_event("synthesize", {"text": "hi", "voice": {"name": "fifo"}})
    ),
    "voice-dir 'loop' named": lambda p, t: _wy(
        p, _wy_event("synthesize", {"text": "hi", "voice": {"name": "loop"}})
    ),
    "voice-dir 'dangling' named": lambda p, t: _wy(
        p, _wy_event("synthesize", {"text": "hi", "voice": {"name": "dangling"}})
    ),
    "voice-dir 'zero' named": lambda p, t: _wy(
        p, _wy_event("synthesize", {"text": "hi", "voice": {"name": "zero"}})
    ),
    "voice-dir 'huge' named": lambda p, t: _wy(
        p, _wy_event("synthesize", {"text": "hi", "voice": {"name": "huge"}})
    ),
    "voice-dir 'dir' named": lambda p, t: _wy(
        p, _wy_event("synthesize", {"text": "hi", "voice": {"name": "dir"}})
    ),
    "voice-dir 'passwd' named": lambda p, t: _wy(
        p, _wy_event("synthesize", {"text": "hi", "voice": {"name": "passwd"}})
    ),
    "describe lists the voice dir": lambda p, t: _wy(p, _wy_event("describe"), want=b"info"),
    "synthesize-chunk before start": lambda p, t: _wy(
        p, _wy_event("synthesize-chunk", {"text": "a"})
    ),
    "unknown event type": lambda p, t: _wy(p, _wy_event("x" * 5000), want=None, timeout=3),
    "payload announced, never sent": lambda p, t: _wy(
        p, b'{"type": "synthesize", "payload_length": 1000}\nabc', want=None, timeout=3
    ),
    "10 clients gone mid-synthesis": lambda p, t: [
        _wy(p, _wy_event("synthesize", {"text": "word " * 200}), want=None, timeout=0.3)
        for _ in range(10)
    ][0],  # fmt: skip
}


def _start_wy(tmp: Path) -> tuple[Server, int]:
    hostile_voice_dir(tmp)
    server = Server(
        ["wyoming", "--uri", "tcp://127.0.0.1:0", *VOICED, "--voice-dir", "voices",
         "--idle-timeout", "5"], tmp
    )  # fmt: skip
    return server, server.wait_event("listening")["port"]


probes_alive["Wyoming server"] = lambda port: _wy(
    port, _wy_event("synthesize", {"text": "hello."}), want=b"audio-stop"
)
_server_group("Wyoming server", _start_wy, WY_PROBES)


# -------------------------------------------------------------------- servers: MCP


class Mcp:
    def __init__(self, server: Server) -> None:
        self.server = server
        self.next_id = 100
        self.lock = threading.Lock()
        self.out: list[dict] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.server.proc.stdout is not None
        for line in self.server.proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                msg = {"unparsable": line.decode("utf-8", "replace")}
            with self.server.cond:
                self.out.append(msg)
                self.server.cond.notify_all()

    def send(self, line: bytes) -> None:
        assert self.server.proc.stdin is not None
        self.server.proc.stdin.write(line + b"\n")
        self.server.proc.stdin.flush()

    def answer(self, rid: object, timeout: float = 30) -> dict | None:
        deadline = time.monotonic() + timeout
        with self.server.cond:
            while time.monotonic() < deadline:
                for msg in self.out:
                    if msg.get("id") == rid and ("result" in msg or "error" in msg):
                        return msg
                self.server.cond.wait(0.3)
        return None

    def call(self, tool: str, args: object, timeout: float = 60) -> dict | None:
        self.next_id += 1
        rid = self.next_id
        self.send(json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                              "params": {"name": tool, "arguments": args}}).encode())  # fmt: skip
        return self.answer(rid, timeout)


def _start_mcp(tmp: Path) -> tuple[Server, Mcp]:
    (tmp / "out").mkdir()
    (tmp / "out" / "mine.wav").write_bytes(b"user's own")
    (tmp / "out" / "keep.txt").write_bytes(b"user's own")
    (tmp / "out" / "sub").mkdir()
    os.mkfifo(tmp / "out" / "fifo.wav")
    (tmp / "out" / "link.wav").symlink_to(tmp / "outside.wav")
    (tmp / "outside.wav").write_bytes(b"outside")
    hostile_voice_dir(tmp)
    server = Server(
        ["mcp", *VOICED, "--output-dir", str(tmp / "out"), "--voice-dir", "voices"], tmp, stdin=True
    )
    mcp = Mcp(server)
    mcp.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "sweep", "version": "1"}}}).encode())  # fmt: skip
    if mcp.answer(1) is None:
        raise RuntimeError(f"MCP never answered initialize: {server.lines[-5:]}")
    mcp.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
    mcp.root = tmp  # type: ignore[attr-defined]
    return server, mcp


def _tool(args: object, tool: str = "synthesize", ok: bool = False,
          check: Callable[[Path], str | None] | None = None) -> Callable:  # fmt: skip
    def probe(mcp: Mcp, tmp: Path) -> str | None:
        answer = mcp.call(tool, args)
        if answer is None:
            return "no answer within 60 s"
        text = json.dumps(answer)
        problem = shown_problem(text)
        if problem:
            return f"{problem}: {text[:300]!r}"
        failed = "error" in answer or answer.get("result", {}).get("isError")
        if not ok and not failed:
            return f"accepted: {text[:200]!r}"
        root = mcp.root  # type: ignore[attr-defined]
        if (root / "out" / "keep.txt").read_bytes() != b"user's own":
            return "a file of the user's in --output-dir that no call named changed"
        if (root / "outside.wav").read_bytes() != b"outside":
            return "a file outside --output-dir was written through a symlink"
        return check(root) if check else None

    return probe


def _raw_mcp(line: bytes, want_error: bool = True, rid: int | None = None) -> Callable:
    """A raw line; then a ping must be answered (and the line's own answer, with ``rid``,
    must be an error: JSON-RPC's or the tool's)."""

    def probe(mcp: Mcp, tmp: Path) -> str | None:
        before = len(mcp.out)
        mcp.send(line)
        if rid is not None:
            answer = mcp.answer(rid, timeout=10)
            if answer is None:  # a line JSON-RPC cannot read: its error has id null
                nulls = [m for m in mcp.out[before:] if m.get("id") is None and "error" in m]
                answer = nulls[0] if nulls else None
            if answer is None:
                return f"no answer to request {rid}"
            text = json.dumps(answer)
            if shown_problem(text):
                return f"{shown_problem(text)}: {text[:300]!r}"
            if "error" not in answer and not answer.get("result", {}).get("isError"):
                return f"accepted: {text[:200]!r}"
        mcp.next_id += 1
        ping = mcp.next_id
        mcp.send(json.dumps({"jsonrpc": "2.0", "id": ping, "method": "ping"}).encode())
        if mcp.answer(ping) is None:
            return "no answer to a ping after it: the server is stuck"
        new = mcp.out[before:]
        text = json.dumps(new)
        problem = shown_problem(text)
        if problem:
            return f"{problem}: {text[:300]!r}"
        if want_error and rid is None and not any("error" in m for m in new):
            return f"no JSON-RPC error (got {text[:200]!r})"
        return None

    return probe


MCP_PROBES: dict[str, Callable] = {
    "line nested 10^5 deep": _raw_mcp(nested_json(100000)),
    "params nested 10^5 deep": _raw_mcp(
        b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":' + nested_json(100000) + b"}"
    ),
    "line nested 5000 deep (10 kB)": _raw_mcp(nested_json(5000)),
    "params nested 5000 deep (10 kB)": _raw_mcp(
        b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":' + nested_json(5000) + b"}"
    ),
    "arguments nested 900 deep": _raw_mcp(
        b'{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"synthesize",'
        b'"arguments":{"text":' + nested_json(900) + b"}}}",
        rid=12,
    ),
    "arguments nested 150 deep": _raw_mcp(
        b'{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"synthesize",'
        b'"arguments":{"text":' + nested_json(150) + b"}}}",
        rid=13,
    ),
    "line not UTF-8": _raw_mcp(b'{"jsonrpc":"2.0","id":8,"method":"\xff"}'),
    "NaN id": _raw_mcp(b'{"jsonrpc":"2.0","id":NaN,"method":"ping"}'),
    "id 10^400": _raw_mcp(b'{"jsonrpc":"2.0","id":1' + b"0" * 400 + b',"method":"ping"}', False),
    "unknown method": _raw_mcp(b'{"jsonrpc":"2.0","id":9,"method":"x/' + b"y" * 5000 + b'"}'),
    "empty line": _raw_mcp(b"", False),
    "path /etc/passwd": _tool({"text": "hi", "path": "/etc/passwd"}),
    "path ../escape.wav": _tool(
        {"text": "hi", "path": "../escape.wav"},
        check=lambda r: "escaped" if (r / "escape.wav").exists() else None,
    ),
    "path onto an existing file (replaced, as -o does)": _tool(
        {"text": "hi", "path": "mine.wav"}, ok=True, check=lambda r: wav_ok(r / "out" / "mine.wav")
    ),
    "path through a symlink out": _tool({"text": "hi", "path": "link.wav"}),
    "path a folder": _tool({"text": "hi", "path": "sub"}),
    "path '.'": _tool({"text": "hi", "path": "."}),
    "path empty": _tool({"text": "hi", "path": ""}),
    "path with NUL": _tool({"text": "hi", "path": "a\0b.wav"}),
    "path into a missing folder": _tool({"text": "hi", "path": "no/such/x.wav"}),
    "path 300-char name": _tool({"text": "hi", "path": "n" * 300 + ".wav"}),
    "voice /etc/passwd": _tool({"text": "hi", "voice": "/etc/passwd"}),
    "voice file:// URL": _tool({"text": "hi", "voice": "file:///etc/passwd"}),
    "text 10^4 chars (past --max-chars)": _tool({"text": "a" * 10**4}),
    "a 2 MB line": _raw_mcp(b'{"jsonrpc":"2.0","id":14,"method":"' + b"a" * (2 << 20) + b'"}'),
    "text a list": _tool({"text": ["a"]}),
    "arguments a list": _tool(["hi"]),
    "voice 10^400 (an integer)": _tool({"text": "hi", "voice": int("1" + "0" * 400)}),
    "language an object": _tool({"text": "hi", "language": {"a": 1}}),
    "text NaN": lambda m, t: _raw_mcp(
        b'{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"synthesize",'
        b'"arguments":{"text":NaN}}}',
        rid=11,
    )(m, t),
    "voice-dir 'fifo' named": _tool({"text": "hi", "voice": "fifo"}),
    "voice-dir 'loop' named": _tool({"text": "hi", "voice": "loop"}),
    "voice-dir 'dangling' named": _tool({"text": "hi", "voice": "dangling"}),
    "voice-dir 'zero' named": _tool({"text": "hi", "voice": "zero"}),
    "voice-dir 'huge' named": _tool({"text": "hi", "voice": "huge"}),
    "voice-dir 'dir' named": _tool({"text": "hi", "voice": "dir"}),
    "voice-dir 'passwd' named": _tool({"text": "hi", "voice": "passwd"}),
    "list_voices over the voice dir": _tool({}, tool="list_voices", ok=True),
    "unknown tool": _tool({"text": "hi"}, tool="rm -rf"),
    "a fresh file (works)": _tool(
        {"text": "hi", "path": "new.wav"}, ok=True, check=lambda r: wav_ok(r / "out" / "new.wav")
    ),  # fmt: skip
}


def _mcp_alive(mcp: object) -> str | None:
    answer = mcp.call("synthesize", {"text": "hello."})  # type: ignore[attr-defined]
    if answer is None or "error" in answer or answer.get("result", {}).get("isError"):
        return f"a plain synthesize failed: {json.dumps(answer)[:200]}"
    return None


probes_alive["MCP server (stdio)"] = _mcp_alive
_server_group("MCP server (stdio)", _start_mcp, MCP_PROBES)


# ----------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-k", default="", help="only cases whose group or name has this")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--budget", type=float, default=3600, help="seconds for the whole run")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folders")
    args = parser.parse_args(argv)
    chosen = [
        c for c in SWEEP.cases if args.k.lower() in f"{c.group} {c.name}".lower()
        or c.name.startswith("after every probe") and args.k.lower() in c.group.lower()
    ]  # fmt: skip
    if args.list:
        for c in chosen:
            print(f"{c.group}: {c.name}")
        print(f"{len(chosen)} cases")
        return 0
    start = time.monotonic()
    outcomes: list[Outcome] = []
    scratch = Path(tempfile.mkdtemp(prefix="hostile-sweep-"))
    for n, case in enumerate(chosen):
        if time.monotonic() - start > args.budget:
            print(f"budget spent: {len(chosen) - n} cases not run", flush=True)
            break
        tmp = scratch / f"{n:04d}"
        tmp.mkdir()
        began = time.monotonic()
        try:
            problem = case.body(tmp)
        except Exception as exc:  # the sweep's own failure: shown, not hidden
            problem = f"sweep error: {type(exc).__name__}: {exc}"[:300]
        outcomes.append(Outcome(case, problem, time.monotonic() - began))
        mark = "FAIL" if problem else "ok  "
        print(f"{mark} {case.group}: {case.name}" + (f"\n     {problem}" if problem else ""),
              flush=True)  # fmt: skip
    for server in STARTED:  # a -k that left out a group's last case leaves its server up
        server.stop()
    if not args.keep:
        for p in scratch.rglob("*"):
            with contextlib.suppress(OSError):
                p.chmod(0o755 if p.is_dir() else 0o644)
        shutil.rmtree(scratch, ignore_errors=True)
    groups: dict[str, list[Outcome]] = {}
    for o in outcomes:
        groups.setdefault(o.case.group, []).append(o)
    print("\nper group: cases, failures")
    for group, items in groups.items():
        failed = sum(1 for o in items if o.problem)
        print(f"  {group}: {len(items)}, {failed}")
    failures = [o for o in outcomes if o.problem]
    print(f"{len(outcomes)} cases, {len(failures)} failed, {time.monotonic() - start:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
