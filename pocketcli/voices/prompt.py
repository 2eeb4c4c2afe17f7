"""Turning a recording into the voice prompt the Mimi encoder sees.

The rules are pocket-tts's (``get_state_for_audio_prompt`` with
``truncate=True``, as its ``export-voice`` does): mono, at most the first 30
seconds (cut at the source rate, before resampling), resampled to 24 kHz,
then ``end_on_pause``. Resampling is pocket-tts's own (``resample_poly``'s
filter, reimplemented in numpy in ``pocketcli.audio.resample``), so a
recording at any rate gives the prompt, and the voice, pocket-tts makes.

What pocket-tts would silently accept but clones badly is refused here with
a message: under 1 s of audio, silence, NaN or infinite samples. Clipping is
reported and the audio still used.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

from pocketcli.audio.read import read_audio
from pocketcli.audio.resample import resample
from pocketcli.errors import PromptError as PromptError  # defined there; re-exported

MAX_PROMPT_SECONDS = 30.0
MIN_PROMPT_SECONDS = 1.0
SILENCE_PEAK_DBFS = -60.0  # a peak below this is no usable recording
FULL_SCALE = 0.999  # |sample| at or above this counts as clipped
CLIPPED_FRACTION_WARNING = 0.001  # report clipping past 0.1 % of the samples
MAX_PEAK = 1000.0  # 60 dB over full scale: past it a float recording holds no audio

Warn = Callable[[str], None]


class VoiceWarning(UserWarning):
    """Something the user should know about a voice (prompt cut to 30 s, clipped, .bin cut)."""


def default_warn(message: str) -> None:
    """Without a callback, warnings go through Python's ``warnings`` (category VoiceWarning)."""
    warnings.warn(message, VoiceWarning, stacklevel=3)


def load_prompt(path: str | Path, sample_rate: int, on_warning: Warn | None = None) -> np.ndarray:
    """Reads a recording and prepares it for the encoder (see ``prepare_prompt``)."""
    decoded = read_audio(path, max_seconds=MAX_PROMPT_SECONDS)
    return prepare_prompt(
        decoded.samples,
        decoded.sample_rate,
        sample_rate,
        on_warning,
        total_seconds=decoded.total_seconds,
        name=str(path),
    )


def prepare_prompt(
    samples: np.ndarray,
    source_rate: int,
    sample_rate: int,
    on_warning: Warn | None = None,
    *,
    total_seconds: float | None = None,
    name: str = "the audio",
) -> np.ndarray:
    """Mono float samples at ``source_rate`` -> the 24 kHz prompt after ``end_on_pause``.

    ``samples`` is ``[n]`` or ``[n, channels]`` (float, or int16 scaled by
    1/32768). ``total_seconds`` is the length of the whole recording when the
    caller already decoded only its start.
    """
    warn = on_warning or default_warn
    audio = _as_mono_float(samples, name)
    if not isinstance(source_rate, int | np.integer) or not 0 < source_rate <= 768_000:
        raise PromptError(
            f"{name}: sample rate must be a positive integer in Hz, got {source_rate!r}"
        )
    bad = int(np.count_nonzero(~np.isfinite(audio)))
    if bad:
        raise PromptError(
            f"{name} holds {bad} NaN or infinite sample(s) out of {audio.size}:"
            " it cannot be used as a voice prompt"
        )
    limit = int(MAX_PROMPT_SECONDS * source_rate)
    total = max(total_seconds or 0.0, audio.size / source_rate)
    if audio.size > limit or total > MAX_PROMPT_SECONDS + 1e-9:
        audio = audio[:limit]
        warn(
            f"{name} is {total:.1f} s long: only its first {MAX_PROMPT_SECONDS:.0f} s are"
            " used for the voice"
        )
    _check_level(audio, name, warn)
    if source_rate != sample_rate:
        audio = resample(audio, int(source_rate), sample_rate)
    seconds = audio.size / sample_rate
    if seconds < MIN_PROMPT_SECONDS:
        raise PromptError(
            f"{name} is too short for voice cloning: {seconds:.2f} s"
            f" (at least {MIN_PROMPT_SECONDS:.0f} s of speech is needed)"
        )
    prompt, kept = end_on_pause(audio, sample_rate)
    if kept / sample_rate < MIN_PROMPT_SECONDS:
        raise PromptError(
            f"{name} has only {kept / sample_rate:.2f} s before its trailing"
            f" silence: at least {MIN_PROMPT_SECONDS:.0f} s of speech is needed"
        )
    return prompt


def _as_mono_float(samples: np.ndarray, name: str) -> np.ndarray:
    a = np.asarray(samples)
    if a.dtype == np.int16:
        a = a.astype(np.float32) / np.float32(32768.0)
    elif not np.issubdtype(a.dtype, np.floating):
        raise PromptError(f"{name}: samples must be float (or int16), got {a.dtype}")
    if a.ndim == 2:
        a = a[:, 0] if a.shape[1] == 1 else a.astype(np.float32).mean(axis=1)
    elif a.ndim != 1:
        raise PromptError(
            f"{name}: samples must be [n] or [n, channels], got shape {list(a.shape)}"
        )
    return np.ascontiguousarray(a, np.float32)


def _check_level(audio: np.ndarray, name: str, warn: Warn) -> None:
    peak = float(np.max(np.abs(audio))) if audio.size else 0.0
    if peak > MAX_PEAK:  # its squares would overflow float32 in end_on_pause
        raise PromptError(
            f"{name} holds samples of {peak:.3g}, far beyond full scale (1.0): it is no"
            " usable recording (a float file written without scaling?)"
        )
    if peak < 10 ** (SILENCE_PEAK_DBFS / 20):
        level = "-inf" if peak == 0 else f"{20 * math.log10(peak):.0f}"
        raise PromptError(
            f"{name} is silent (peak {level} dBFS): record the voice, or raise"
            " its level, and try again"
        )
    clipped = int(np.count_nonzero(np.abs(audio) >= FULL_SCALE))
    if clipped > CLIPPED_FRACTION_WARNING * audio.size:
        warn(
            f"{name} is clipped: {100 * clipped / audio.size:.1f}% of its samples sit at digital"
            " full scale, so the cloned voice may sound distorted (record at a lower level)"
        )


def end_on_pause(
    wav: np.ndarray,
    sample_rate: int,
    pause_sec: float = 0.08,
    fade_sec: float = 0.02,
    floor_db: float = 35.0,
) -> tuple[np.ndarray, int]:
    """pocket-tts's ``end_on_pause``, in float32 like its torch code; also returns the
    number of samples kept before the appended pause.

    Frames of 20 ms: everything after the last frame within ``floor_db`` of the
    loudest is cut, the last ``fade_sec`` of what is left fades out linearly, and
    ``pause_sec`` of zeros is appended (a prompt must end inside a pause).
    """
    frame = max(1, int(0.02 * sample_rate))
    n = wav.shape[-1] // frame
    if n == 0:
        return wav, wav.shape[-1]
    frames = wav[: n * frame].reshape(n, frame)
    rms = np.sqrt(np.mean(np.square(frames), axis=1, dtype=np.float32))
    db = np.float32(20) * np.log10(rms + np.float32(1e-12))
    loud = np.flatnonzero(db > db.max() - np.float32(floor_db))
    end = (int(loud[-1]) + 1) * frame
    out = wav[:end].astype(np.float32, copy=True)
    fade = min(int(fade_sec * sample_rate), end)
    out[end - fade :] *= _torch_linspace(1.0, 0.0, fade)
    pause = np.zeros(int(pause_sec * sample_rate), np.float32)
    return np.concatenate([out, pause]), end


def _torch_linspace(start: float, end: float, steps: int) -> np.ndarray:
    """``torch.linspace`` in float32, bit for bit: the first half counts up from start and
    the rest down from end, each value one fused multiply-add (``start + step * i``
    rounded once). The float64 arithmetic below is exact for these sizes, so rounding
    it to float32 is that single rounding."""
    if steps <= 0:
        return np.zeros(0, np.float32)
    if steps == 1:
        return np.array([start], np.float32)
    s, e = np.float32(start), np.float32(end)
    step = np.float64((e - s) / np.float32(steps - 1))
    idx = np.arange(steps, dtype=np.float64)
    half = steps // 2
    out = np.empty(steps, np.float64)
    out[:half] = np.float64(s) + step * idx[:half]
    out[half:] = np.float64(e) - step * (steps - idx[half:] - 1)
    return out.astype(np.float32)
