"""The tiny model as a browser pack, once per test run, and what the JavaScript readers of
it need: npm packages installed once (scripts off) and a job of chunks and noise that
tests/support/web_generate.mjs runs, with the audio our runner makes of the same job."""

from __future__ import annotations

import atexit
import fcntl
import os
import shutil
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from pocketcli.api import PocketTTS
from pocketcli.config import ModelConfig
from pocketcli.engine.chunk import GenerationSettings
from pocketcli.engine.noise import InjectedNoise
from pocketcli.packs import web
from tests.support.alone import frames_alone
from tests.support.bundlehelp import TINY_CONFIG, TINY_MODEL, TINY_TOKENIZER
from tests.support.paths import TINY

CLIP = TINY / "clone_prompt_24k.wav"
DRIVER_TEXT = "Hello there. This is a second sentence, with a comma, to speak."
# A JavaScript ONNX Runtime (its own kernels, 4-bit included) against ours on the same
# graphs and noise. onnxruntime-node: 1.5e-8 at most; onnxruntime-web's WASM backend in
# headless Chromium: 7.5e-8 (tiny model, peak 0.24). The bound leaves room for other
# CPUs' kernels and the float64 fade-in of the driver.
JS_MAX_ABS = 1e-5


@lru_cache(maxsize=1)
def tiny_web_pack() -> Path:
    """The tiny model as a browser pack, once per run (read-only)."""
    from pocketcli.voices.prompt import load_prompt

    root = Path(tempfile.mkdtemp(prefix="pockettts-web-"))
    atexit.register(shutil.rmtree, root, True)
    config = ModelConfig.from_yaml(TINY_CONFIG)
    clip = load_prompt(CLIP, config.mimi.sample_rate)
    return web.export_web_pack(TINY_MODEL, config, TINY_TOKENIZER, clip, root / "web")


def npm_package(name: str) -> Path:
    """``name``'s folder in a node_modules installed once with scripts off (the CPU and
    WASM binaries ship inside the packages). Offline: what is installed is used as it is;
    npm is asked only for what is missing, and the test skips when it cannot fetch it."""
    npm = shutil.which("npm")
    cache = Path(
        os.environ.get("POCKETTTS_NPM_CACHE", Path(tempfile.gettempdir()) / "pockettts-npm")
    )
    package = cache / "node_modules" / name
    if (package / "package.json").is_file():
        return package
    if npm is None:
        pytest.skip(f"npm is not installed: {name} cannot be installed")
    cache.mkdir(parents=True, exist_ok=True)
    # One install at a time into the shared folder (parallel test runs).
    with open(cache / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (package / "package.json").is_file():
            r = subprocess.run(
                [npm, "install", "--ignore-scripts", "--no-audit", "--no-fund", "--prefix",
                 str(cache), name],
                capture_output=True, timeout=600,
            )  # fmt: skip
            if r.returncode != 0:
                said = [line for line in r.stderr.decode().splitlines() if "error" in line]
                pytest.skip(f"npm could not install {name}: {'; '.join(said[:4])[:400]}")
    return package


def driver_job(text: str = DRIVER_TEXT, seed: int = 7) -> tuple[dict, np.ndarray]:
    """A job for web_generate.mjs (chunks as our planner makes them, noise drawn here) and
    the audio our runner makes of the same chunks and noise on the tiny browser pack."""
    tts = PocketTTS.open(runtime="onnx", model_dir=tiny_web_pack())
    chunks = tts.script(text, normalize=False)
    temperature = 0.3
    rng = np.random.default_rng(seed)
    noise = rng.standard_normal((sum(c.max_frames for c in chunks), 32)) * np.sqrt(temperature)
    noise = noise.astype(np.float32)
    settings = GenerationSettings(eos_threshold=-4.0)
    frames = frames_alone(
        tts.runtime, chunks, tts.voices.get("alba"), InjectedNoise(noise), settings
    )
    ours = np.concatenate([f.audio for f in frames])
    job = {
        "chunks": [
            {"tokens": [int(t) for t in c.token_ids], "frames_after_eos": c.frames_after_eos,
             "max_frames": c.max_frames}
            for c in chunks
        ],
        "noise": noise.tolist(),
    }  # fmt: skip
    return job, ours
