"""Playback without dropouts: underruns and buffer margin of ``tts --play``'s jitter buffer.

Each MiniMax phrase is enqueued into one live session the way a chat program
would (the next one once the previous has been heard); its frames go, as they
come, into the ``JitterBuffer`` that ``--play`` uses, and a clock thread pulls
20 ms blocks from it at the real-time rate, as a sound card's callback does
(this machine has no sound card; ALSA's null device is not paced). For each
prebuffer size it reports underruns (the device found the buffer empty in
mid-phrase: a click or gap), the least audio the buffer held (margin), and the
time from enqueue to first sound. ``--device`` plays through PortAudio instead.

Full-size english architecture with random weights (the real weights cannot be
downloaded here) at int8; EOS fires at frame 6 on random weights, so
``--frames-after-eos`` sets each phrase's length (40: about 3.7 s).

    pip install -e '.[test]'
    python benchmarks/bench_playback.py [--phrases 8] [--prebuffer-ms 0,80,160]
    python benchmarks/bench_playback.py --model-dir PACK --voice-file VOICE
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from random_pack import cached_random_pack  # noqa: E402

from pocketcli import PocketTTS  # noqa: E402
from pocketcli.audio.playback import JitterBuffer, PortAudioSink, parse_device  # noqa: E402
from pocketcli.bench.corpus import load_corpus  # noqa: E402
from pocketcli.options import SpeakOptions  # noqa: E402

BLOCK_SECONDS = 0.02  # a sound card callback's block


class PacedDevice:
    """Pulls ``BLOCK_SECONDS`` blocks from a jitter buffer on a real-time schedule."""

    def __init__(self, buffer: JitterBuffer, sample_rate: int) -> None:
        self.buffer = buffer
        self.block = round(BLOCK_SECONDS * sample_rate)
        self.first_sound: float | None = None  # monotonic time audio first came out
        self.late_ms: list[float] = []  # how late each pull woke (the clock thread's own jitter)
        self.speaking = False  # set by the benchmark while a phrase is being generated
        self.margins: list[int] = []  # samples left after each pull while speaking
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        out = np.zeros(self.block, np.float32)
        due = time.perf_counter()
        while not self._stop.is_set():
            due += BLOCK_SECONDS
            delay = due - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            else:
                self.late_ms.append(-1000 * delay)
            before = self.buffer.played
            self.buffer.pull(out)
            if self.buffer.played > before:
                if self.first_sound is None:
                    self.first_sound = time.perf_counter()
                if self.speaking:
                    self.margins.append(self.buffer.held)

    def close(self) -> None:
        self._stop.set()
        self._thread.join()


def build_pack(work: Path) -> tuple[Path, Path]:
    return cached_random_pack(work, "int8")


def run_setting(tts, voice, phrases, prebuffer_ms: float, options, device) -> dict:
    rate = tts.sample_rate
    sink = None
    if device is not None:
        sink = PortAudioSink(rate, parse_device(device), prebuffer_ms / 1000)
        buffer, clock = sink.buffer, None
    else:
        buffer = JitterBuffer(round(prebuffer_ms / 1000 * rate))
        clock = PacedDevice(buffer, rate)
    first_sound_ms: list[float] = []
    underruns: list[int] = []
    margins: list[float] = []
    audio_s = 0.0
    with tts.session(voice, options) as session:
        for text in phrases:
            if clock is not None:
                clock.first_sound = None
            before = buffer.underruns
            start = time.perf_counter()
            if clock is not None:
                clock.speaking = True
            session.enqueue(text)
            for frame in session.until_idle():
                buffer.push(frame.audio)  # through the output chain's filters
                audio_s += frame.audio.size / rate
            if clock is not None:
                clock.speaking = False
            buffer.flush()
            buffer.wait_empty(timeout=120)
            if clock is not None and clock.first_sound is not None:
                first_sound_ms.append(1000 * (clock.first_sound - start))
            underruns.append(buffer.underruns - before)
            time.sleep(0.1)  # the device plays out its last block
    if clock is not None:
        clock.close()
    if sink is not None:
        sink.close()
    if buffer.min_margin is not None:
        margins.append(1000 * buffer.min_margin / rate)
    result = {
        "prebuffer_ms": prebuffer_ms,
        "phrases": len(phrases),
        "audio_s": round(audio_s, 2),
        "underruns": sum(underruns),
        "phrases_with_underruns": sum(1 for u in underruns if u),
        "min_margin_ms": round(min(margins), 1) if margins else None,
        "first_sound_ms_p50": round(statistics.median(first_sound_ms), 1)
        if first_sound_ms
        else None,
        "first_sound_ms_max": round(max(first_sound_ms), 1) if first_sound_ms else None,
    }
    if clock is not None:
        ms = np.asarray(clock.margins, np.float64) * 1000 / rate
        if ms.size:
            for q in (1, 5, 50):
                result[f"margin_ms_p{q}"] = round(float(np.percentile(ms, q)), 1)
        result["clock_late_pulls"] = len(clock.late_ms)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model-dir", type=Path, help="a built pack (default: build one)")
    parser.add_argument("--voice-file", type=Path)
    parser.add_argument("--precision", default="int8")
    parser.add_argument("--work", type=Path, default=Path("/tmp/pockettts-bench-playback"))
    parser.add_argument("--phrases", type=int, default=8)
    parser.add_argument("--prebuffer-ms", default="0,80,160")
    parser.add_argument("--frames-after-eos", type=int, default=40)
    parser.add_argument("--device", help="play through PortAudio on this device")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()

    if args.model_dir is None:
        args.work.mkdir(parents=True, exist_ok=True)
        args.model_dir, args.voice_file = build_pack(args.work)
    tts = PocketTTS.open(runtime="onnx", model_dir=args.model_dir, precision=args.precision)
    voice = tts.voices.load(args.voice_file) if args.voice_file else None
    phrases = load_corpus("minimax-english")[: args.phrases]
    options = SpeakOptions(seed=1, frames_after_eos=args.frames_after_eos)
    list(tts.stream("Warm up.", voice, options))
    print(
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}, "
        f"precision {args.precision}, {len(phrases)} phrases",
        flush=True,
    )
    results = []
    for prebuffer in (float(v) for v in args.prebuffer_ms.split(",")):
        result = run_setting(tts, voice, phrases, prebuffer, options, args.device)
        results.append(result)
        print(json.dumps(result), flush=True)
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
