"""Voice cloning on a FluidAudio pack: the Mimi encoder plus speaker projection.

FluidAudio tries the pack's own ``mimi_encoderv3`` (published for the
non-English packs) and falls back to the repository root's
``mimi_encoderv2``, which bakes the English codec and projection; for a pack
whose projection differs, it then reprojects when both
``<root>/encoder_recover_pinv.bin`` and the pack's
``constants_bin/speaker_proj_weight.bin`` exist (24-layer packs):
``latent = conditioning @ pinv``, ``conditioning' = latent @ proj.T``.

Both encoders take exactly 10 s (240 000 samples at 24 kHz: longer audio is
cut, shorter is zero-padded) and return 125 frames, of which the first
``min(125, ceil(samples / 1920))`` are kept. The encoder is causal, so the
kept frames are those of the unpadded prompt.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pocketcli.packs.manifest import PackError
from pocketcli.runtimes.coreml.constants import read_floats
from pocketcli.runtimes.coreml.predictor import ModelMissing, Predictor

RECOVER_PINV = "encoder_recover_pinv.bin"
PACK_ENCODER, ROOT_ENCODER = "mimi_encoderv3", "mimi_encoderv2"
ENCODER_INPUT, ENCODER_OUTPUT = "audio", "conditioning"

Opener = Callable[[Path, str], Predictor]  # (directory, model name) -> Predictor


@dataclass(frozen=True)
class VoiceEncoder:
    model: Predictor
    samples: int  # fixed input length
    frames: int  # fixed output frames
    samples_per_frame: int
    output: str
    reproject: tuple[np.ndarray, np.ndarray] | None = None  # (pinv [d, L], proj [d, L])

    def encode(self, audio_24k: np.ndarray) -> np.ndarray:
        """Mono 24 kHz ``[samples]`` -> conditioning ``[frames, d_model]`` (at most 10 s)."""
        audio = np.asarray(audio_24k, np.float32).reshape(-1)
        if audio.size == 0:
            raise ValueError("cannot encode an empty voice prompt")
        used = min(audio.size, self.samples)
        window = np.zeros((1, 1, self.samples), np.float32)
        window[0, 0, :used] = audio[:used]
        out = self.model.predict({ENCODER_INPUT: window})[self.output]
        cond = np.asarray(out, np.float32).reshape(self.frames, -1)
        keep = min(self.frames, math.ceil(used / self.samples_per_frame))
        cond = cond[:keep]
        if self.reproject is not None:
            pinv, proj = self.reproject
            cond = (cond @ pinv) @ proj.T
        return np.ascontiguousarray(cond, np.float32)


def open_voice_encoder(
    pack_dir: Path,
    open_model: Opener,
    d_model: int,
    latent_dim: int,
    samples_per_frame: int,
    speaker_proj: np.ndarray | None,
) -> VoiceEncoder | str:
    """The pack's encoder, else the root's (with reprojection if possible); else why not."""
    root = pack_dir.parent.parent
    try:
        return _checked(open_model(pack_dir, PACK_ENCODER), d_model, samples_per_frame, None)
    except ModelMissing:
        pass
    try:
        model = open_model(root, ROOT_ENCODER)
    except ModelMissing:
        return f"neither {PACK_ENCODER} in {pack_dir} nor {ROOT_ENCODER} in {root} is downloaded"
    pinv_path = root / RECOVER_PINV
    reproject = None
    if speaker_proj is not None and pinv_path.is_file():
        pinv = read_floats(pinv_path, d_model * latent_dim).reshape(d_model, latent_dim)
        reproject = (pinv, speaker_proj)
    return _checked(model, d_model, samples_per_frame, reproject)


def _checked(
    model: Predictor,
    d_model: int,
    samples_per_frame: int,
    reproject: tuple[np.ndarray, np.ndarray] | None,
) -> VoiceEncoder:
    inputs = {d.name: d for d in model.inputs}
    audio = inputs.get(ENCODER_INPUT)
    if (
        len(inputs) != 1
        or audio is None
        or audio.shape is None
        or len(audio.shape) != 3
        or audio.shape[:2] != (1, 1)
    ):
        raise PackError(
            f"{model.label}: expected one input 'audio' of shape [1, 1, samples],"
            f" found {[(d.name, d.shape) for d in model.inputs]}"
        )
    outputs = {d.name: d for d in model.outputs}
    out = outputs.get(ENCODER_OUTPUT) or (model.outputs[0] if len(model.outputs) == 1 else None)
    if (
        out is None
        or out.shape is None
        or len(out.shape) != 3
        or out.shape[0] != 1
        or out.shape[2] != d_model
    ):
        found = [(d.name, d.shape) for d in model.outputs]
        raise PackError(
            f"{model.label}: expected an output 'conditioning' of shape"
            f" [1, frames, {d_model}], found {found}"
        )
    samples, frames = audio.shape[2], out.shape[1]
    if frames * samples_per_frame < samples:
        raise PackError(f"{model.label}: {frames} frames cannot cover {samples} samples")
    return VoiceEncoder(model, samples, frames, samples_per_frame, out.name, reproject)
