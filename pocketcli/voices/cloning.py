"""Voice cloning, written once for every runtime.

audio -> (runtime) Mimi encoder + speaker projection -> conditioning
``[frames, d_model]`` -> ``bos_before_voice`` + conditioning prefilled into a
fresh FlowLM cache -> the cache is the voice state. This is
``TTSModel.get_state_for_audio_prompt`` of pocket-tts. A FluidAudio ``.bin``
voice file is the same conditioning, so it goes through the same prefill.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from pocketcli.errors import (
    VoiceCloningUnavailable as VoiceCloningUnavailable,  # defined there; re-exported
)
from pocketcli.voices.state import VoiceError, VoiceState

if TYPE_CHECKING:
    from pocketcli.config import ModelConfig


class VoiceRuntime(Protocol):
    """What cloning and voice files need of a runtime (``runtimes.base.Runtime`` has
    it; declared here so voices/ does not depend on runtimes/, which uses voices)."""

    config: ModelConfig
    bos_before_voice: np.ndarray | None
    cloning_unavailable_reason: str | None

    def encode_voice(self, audio: np.ndarray) -> np.ndarray: ...

    def start_sequence(self, voice: VoiceState | None, extra_capacity: int) -> Any: ...

    def prefill(self, seq: Any, rows: np.ndarray) -> None: ...

    def voice_state(self, seq: Any) -> VoiceState: ...


# Kyutai's weights with voice cloning; the public "-without-voice-cloning" ones lack it.
GATED_REPO = "kyutai/pocket-tts"


class LayoutReason(str):
    """A reason no weights can change: the pack's layout itself has no encoder (a browser
    pack), so logging in to Hugging Face and rebuilding would not help."""


def unavailable_message(reason: str) -> str:
    """One line: why this pack cannot clone, and how to get the weights that can (or,
    for a layout that never clones, where to clone instead)."""
    if isinstance(reason, LayoutReason):
        return (
            f"this model pack cannot clone voices: {reason}, whatever weights it was made"
            " from. Clone with an ONNX pack or a bundle that can (`pockettts clone`), save"
            " the voice to a file, then speak here with that voice file"
        )
    return (
        f"this model pack cannot clone voices: {reason or 'it was built without cloning'}."
        f" Cloning needs the weights of the gated Hugging Face repository {GATED_REPO}:"
        f" accept its terms at https://huggingface.co/{GATED_REPO}, log in with"
        " `hf auth login` (or `huggingface-cli login`), then rebuild the pack from that"
        " checkpoint (ready-made voice files still work without it)"
    )


def require_cloning(runtime: VoiceRuntime) -> None:
    reason = runtime.cloning_unavailable_reason
    if reason is not None:
        raise VoiceCloningUnavailable(unavailable_message(reason))


def clone_voice(runtime: VoiceRuntime, prompt_24k: np.ndarray) -> VoiceState:
    """The voice state for a prepared prompt (see ``pocketcli.voices.prompt``)."""
    require_cloning(runtime)
    conditioning = runtime.encode_voice(np.ascontiguousarray(prompt_24k, np.float32))
    return voice_from_conditioning(runtime, conditioning)


def voice_from_conditioning(runtime: VoiceRuntime, conditioning: np.ndarray) -> VoiceState:
    """Prefills ``bos_before_voice`` (when the model inserts it) and the conditioning."""
    d_model = runtime.config.flow_lm.transformer.d_model
    cond = np.ascontiguousarray(conditioning, np.float32)
    if cond.ndim != 2 or cond.shape[1] != d_model or cond.shape[0] == 0:
        raise VoiceError(
            f"voice conditioning has shape {list(cond.shape)}, the model needs [frames, {d_model}]"
        )
    if not np.isfinite(cond).all():
        raise VoiceError("voice conditioning holds NaN or infinite values")
    bos = runtime.bos_before_voice
    rows = cond if bos is None else np.concatenate([bos.reshape(1, d_model), cond])
    seq = runtime.start_sequence(None, rows.shape[0])
    runtime.prefill(seq, rows)
    return replace(runtime.voice_state(seq), conditioning=cond)
