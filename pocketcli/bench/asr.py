"""Speech recognisers for the round-trip intelligibility check (optional extras).

``pocketsphinx`` ships its English model inside the wheel, so it runs
offline anywhere (extra ``asr``); ``faster-whisper`` is far more accurate but
needs a model it downloads or that ``--asr-model`` points at. The harness
names the backend it used in its report.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import soxr

from pocketcli.bench import ASR_BACKENDS
from pocketcli.errors import UserError
from pocketcli.options import DEFAULT_LANGUAGE

BACKENDS = ASR_BACKENDS


@dataclass
class Recognizer:
    name: str
    transcribe: Callable[[np.ndarray, int], str]


def _pocketsphinx() -> Recognizer:
    from pocketsphinx import Decoder

    decoder = Decoder(samprate=16_000)

    def transcribe(audio: np.ndarray, sample_rate: int) -> str:
        pcm = soxr.resample(audio.astype(np.float32), sample_rate, 16_000, quality="HQ")
        raw = (np.clip(pcm, -1, 1) * 32767).astype("<i2").tobytes()
        decoder.start_utt()
        decoder.process_raw(raw, full_utt=True)
        decoder.end_utt()
        hyp = decoder.hyp()
        return hyp.hypstr if hyp is not None else ""

    return Recognizer("pocketsphinx", transcribe)


def _faster_whisper(model: str | None, language: str) -> Recognizer:
    from faster_whisper import WhisperModel

    whisper = WhisperModel(model or "base", device="cpu", compute_type="int8")

    def transcribe(audio: np.ndarray, sample_rate: int) -> str:
        pcm = soxr.resample(audio.astype(np.float32), sample_rate, 16_000, quality="HQ")
        segments, _ = whisper.transcribe(pcm, language=language[:2], beam_size=1)
        return " ".join(s.text.strip() for s in segments)

    return Recognizer(f"faster-whisper ({model or 'base'})", transcribe)


def load_recognizer(
    backend: str, language: str = DEFAULT_LANGUAGE, model: str | None = None
) -> Recognizer | None:
    """The recogniser for ``backend``; None for "none" or when "auto" finds nothing."""
    if backend not in BACKENDS:
        raise UserError(f"unknown ASR backend {backend!r}; choose from {', '.join(BACKENDS)}")
    if backend == "none":
        return None
    order = ["faster-whisper", "pocketsphinx"] if backend == "auto" else [backend]
    errors = []
    for name in order:
        try:
            if name == "pocketsphinx":
                if not language.startswith("english"):
                    raise UserError("pocketsphinx's bundled model is English only")
                return _pocketsphinx()
            return _faster_whisper(model, language)
        except ImportError:
            errors.append(f"{name} is not installed (pip install 'pockettts[asr]')")
        except Exception as exc:  # a missing model, etc.: say so, try the next one
            errors.append(f"{name}: {exc}")
    if backend == "auto":
        return None
    raise UserError("; ".join(errors))
