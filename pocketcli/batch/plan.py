"""From parsed lines to jobs: the seed of each line and the key that says "made from this".

A line's seed is derived from the run's base seed and the line's name (its id,
or ``lineNNNNN-<hash of text>``), never from the order lines are made in or
the worker that makes them: one process, ``--jobs N`` and Ray give the same
file for the same line. The key is a sha256 over everything the audio depends
on (text, model, voice, options, base seed when one was given); a line is
"done" only if the manifest holds a finished record with that key.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import secrets
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pocketcli.batch.parse import BatchItem
from pocketcli.options import SpeakOptions

# Bumped when the audio made for the same key could change (the seed derivation, WAV format).
KEY_VERSION = 1


@dataclass(frozen=True)
class Job:
    """One line to make (picklable: it travels to worker processes and Ray actors)."""

    line: int  # 1-based line number in the batch file
    name: str  # output file stem
    text: str
    seed: int
    key: str  # sha256 of text + settings
    # Where the worker streams the line's WAV (the output folder, so the driver's
    # rename is atomic); None: the worker's temporary folder, and the bytes come back.
    spool: str | None = None
    # What is written beside the WAV, with its stem: "json" (the timed words), "srt" or
    # "vtt" (captions); () for none.
    beside: tuple[str, ...] = ()

    @property
    def file(self) -> str:
        return f"{self.name}.wav"

    @property
    def side_files(self) -> dict[str, str]:
        """The manifest's fields for what is beside the WAV: "words" and "captions"."""
        return {
            ("words" if kind == "json" else "captions"): f"{self.name}.{kind}"
            for kind in self.beside
        }


@dataclass(frozen=True)
class BatchSettings:
    """What every line of one run shares: the options and who the model and voice are."""

    options: SpeakOptions  # the user's; each line gets its own seed derived into it
    base_seed: int  # --seed, or a fresh random one recorded per line in the manifest
    seed_given: bool
    model_id: str  # sha256 of the pack manifest + runtime + precision
    voice_id: str  # sha256 of the voice state ("none" without a voice prompt)
    language: str
    voice_name: str
    beside: tuple[str, ...] = ()  # word files beside each WAV (``Job.beside``)


def line_seed(base_seed: int, name: str) -> int:
    """The seed of one line: 64 bits of sha256(base seed, name)."""
    digest = hashlib.sha256(f"pockettts-batch-seed/{KEY_VERSION}\0{base_seed}\0{name}".encode())
    return int.from_bytes(digest.digest()[:8], "big")


def fresh_base_seed() -> int:
    return secrets.randbits(64)


def model_id(tts) -> str:
    """Identifies the weights: runtime, precision and the pack's manifest (config, files)."""
    runtime = tts.runtime
    digest = hashlib.sha256(f"{runtime.name}\0{getattr(runtime, 'precision', '')}\0".encode())
    pack_dir = Path(tts._pack_dir or getattr(runtime, "pack_dir", ""))
    manifest = pack_dir / "pack.json"
    if manifest.is_file():
        digest.update(manifest.read_bytes())
    else:  # a CoreML pack: its folder says language, version and precision
        digest.update(str(pack_dir.resolve()).encode())
    return digest.hexdigest()


def voice_id(voice) -> str:
    """Identifies a voice state by its numbers, whichever file or recording it came from."""
    if voice is None:
        return "none"
    digest = hashlib.sha256()
    for array in (*voice.keys, *voice.values):
        a = np.ascontiguousarray(array)
        digest.update(f"{a.dtype.str}{a.shape}".encode())
        digest.update(a.tobytes())
    return digest.hexdigest()


@functools.lru_cache(maxsize=16)
def _settings_digest(settings: BatchSettings) -> bytes:
    options = dataclasses.asdict(settings.options)
    options.pop("seed")
    record = {
        "v": KEY_VERSION,
        "model": settings.model_id,
        "voice": settings.voice_id,
        "options": options,
        "seed": settings.base_seed if settings.seed_given else None,
    }
    blob = json.dumps(record, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).digest()


def line_key(settings: BatchSettings, text: str) -> str:
    """sha256 over the settings (hashed once per run) and the line's text."""
    return hashlib.sha256(_settings_digest(settings) + text.encode("utf-8")).hexdigest()


def make_job(item: BatchItem, settings: BatchSettings) -> Job:
    return Job(
        line=item.line_number,
        name=item.name,
        text=item.text,
        seed=line_seed(settings.base_seed, item.name),
        key=line_key(settings, item.text),
        beside=settings.beside,
    )
