"""Turning the flow head's velocity into a latent: the sampler of each head type.

Kept on the host so every runtime that exposes a velocity network shares
one definition of LSD (the released models), Euler flow matching, and the
one-shot drifting/pointwise heads of the small 2026-10 models.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

Velocity = Callable[[tuple[float, ...], np.ndarray], np.ndarray]


def integrate_flow(
    velocity: Velocity, x0: np.ndarray, flow_type: str, decode_steps: int
) -> np.ndarray:
    """Maps noise ``x0`` to a latent with ``decode_steps`` evaluations of ``velocity``."""
    if decode_steps < 1:
        raise ValueError("decode steps must be at least 1")
    x = x0.astype(np.float32, copy=True)
    if flow_type == "lsd":
        for i in range(decode_steps):
            s, t = i / decode_steps, (i + 1) / decode_steps
            x = x + velocity((s, t), x) / np.float32(decode_steps)
        return x
    if flow_type == "flow_matching":
        for i in range(decode_steps):
            x = x + velocity((i / decode_steps,), x) / np.float32(decode_steps)
        return x
    if flow_type == "drifting":
        return velocity((), x)
    if flow_type == "pointwise":
        return x + velocity((), x)
    raise ValueError(f"unknown flow head type {flow_type!r}")
