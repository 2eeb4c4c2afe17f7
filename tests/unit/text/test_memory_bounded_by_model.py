"""Memory bounded by the model, not the input: every chunk fits
``max_tokens`` whatever the text, the text is planned lazily and in linear time, and
a long hostile text runs under a memory limit."""

from __future__ import annotations

import resource
import subprocess
import sys
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pocketcli import PocketTTS
from pocketcli.normalize import Pause
from pocketcli.options import SpeakOptions
from tests.support.cli import SCRIPT, cli_env

ALPHABET = "abcdefghijklmnopqrstuvwxyzABC éü-'"


@pytest.fixture(scope="module")
def tts(pack_dir) -> PocketTTS:
    return PocketTTS.open(runtime="onnx", model_dir=pack_dir)


def plans(tts: PocketTTS, text: str, max_tokens: int):
    return [p for p in tts.script(text, max_tokens=max_tokens) if not isinstance(p, Pause)]


@pytest.fixture(scope="module")
def floor(tts) -> int:
    """The fewest tokens a chunk can have: one token once prepared (capital, period...)."""
    return max(len(p.token_ids) for c in ALPHABET if c.isalpha() for p in plans(tts, c, 1))


@pytest.mark.parametrize("max_tokens", [1, 3, 10, 50])
def test_a_word_longer_than_a_chunk_is_cut_to_fit(tts, floor, max_tokens) -> None:
    word = "pneumonoultramicroscopicsilicovolcanoconiosis" * 40
    got = plans(tts, word, max_tokens)
    assert len(got) > 1
    assert max(len(p.token_ids) for p in got) <= max(max_tokens, floor)
    letters = "".join(c for p in got for c in p.text.lower() if c.isalpha())
    assert letters == word  # nothing dropped, nothing invented


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    text=st.text(alphabet=st.sampled_from(ALPHABET), min_size=1, max_size=600),
    max_tokens=st.integers(min_value=1, max_value=60),
)
def test_no_chunk_exceeds_max_tokens_for_any_unpunctuated_text(
    tts, floor, text, max_tokens
) -> None:
    try:
        got = plans(tts, text, max_tokens)
    except Exception as exc:  # only "nothing to say" is allowed
        assert type(exc).__name__ == "EmptyTextError", exc
        return
    limit = max(max_tokens, floor)
    assert all(len(p.token_ids) <= limit for p in got), [len(p.token_ids) for p in got]


def test_stream_plans_lazily(tts) -> None:
    """The first frame comes before the rest of a long text is planned."""
    planned: list[int] = []
    real = tts._plans

    def counting(*args, **kwargs):
        for plan in real(*args, **kwargs):
            planned.append(1)
            yield plan

    tts._plans = counting
    try:
        text = "One sentence here. [pause:0.1s] " * 200
        stream = tts.stream(
            text, options=SpeakOptions(seed=1, eos_threshold=-1e9, frames_after_eos=0)
        )
        next(iter(stream))
        assert 0 < len(planned) < 5
    finally:
        del tts._plans


def test_decimal_check_decodes_a_bounded_window(tts) -> None:
    """Chunking 1 MB used to decode the whole prefix at every sentence mark (quadratic)."""
    decoded: list[int] = []
    tokenizer = tts._tokenizer
    real = tokenizer.decode

    def counting(ids):
        decoded.append(len(ids))
        return real(ids)

    tokenizer.decode = counting
    try:
        tts.script("It costs 3.5 dollars. Then 4. More here. " * 300, normalize=False)
    finally:
        del tokenizer.decode
    n_ids = len(tokenizer.encode("It costs 3.5 dollars. Then 4. More here. " * 300))
    assert sum(decoded) < 10 * n_ids  # linear, not n_ids * n_sentences


def _peak_rss_mb(args: list[str], stdin: bytes, limit_bytes: int) -> tuple[int, float, bytes]:
    """Runs the CLI under an address-space limit and follows its VmHWM (peak RSS of its
    own memory; a child's ru_maxrss would include pytest's, inherited across fork)."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    env = cli_env()
    proc = subprocess.Popen(
        [SCRIPT, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=limit,
        env=env,
    )
    assert proc.stdin is not None and proc.stderr is not None
    proc.stdin.write(stdin)
    proc.stdin.close()
    peak_kb = 0
    while proc.poll() is None:
        try:
            with open(f"/proc/{proc.pid}/status", encoding="ascii") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        peak_kb = max(peak_kb, int(line.split()[1]))
        except (OSError, ValueError):
            pass
        time.sleep(0.02)
    return proc.returncode, peak_kb / 1024, proc.stderr.read()


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss in KB and RLIMIT_AS as on Linux")
@pytest.mark.parametrize(
    "text",
    [
        "x" * 10_000,  # one word: 15 GB before
        " ".join(["word", "another", "more", "text"] * 1_000),  # no punctuation at all
    ],
    ids=["long-word", "unpunctuated"],
)
def test_hostile_text_runs_in_bounded_memory(pack_dir, tmp_path, text) -> None:
    out = tmp_path / "out.wav"
    args = ["tts", "-o", str(out), "--model-dir", str(pack_dir), "--precision", "int8", "-q"]
    code, peak, err = _peak_rss_mb(args, text.encode(), 4 << 30)
    assert code == 0, err
    assert peak < 400, f"peak RSS {peak:.0f} MB"
    assert out.stat().st_size > 44
