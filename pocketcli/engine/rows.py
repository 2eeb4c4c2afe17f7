"""The model's side of a tick: a runtime adapted once, at the edge, to one call shape.

The scheduler hands a tick's rows (``RowWork``: a chunk's next frame, its noise,
its ``decode_steps``) to ``RowCalls.run``, which fills each row's EOS logit and,
where the EOS rule keeps the frame, its latent. Three adapters, chosen once by
``row_calls``:

- ``BatchedCalls``: a runtime with batched calls (``runtimes.base.batching``):
  the rows past their first frame in one FlowLM call, the kept rows' flow heads in
  one call per ``decode_steps``. Alone in its tick a row takes the row calls, so a
  lone stream gives exactly the samples of a runtime without batched graphs.
- ``RowCalls``: any runtime, one row at a time (``step``, then ``sample_latent``).
- ``SampledCalls``: a runtime whose FlowLM call also samples the latent (the
  browser pack): the frame's noise is peeked before the call and taken only when
  the EOS rule keeps the frame, so a seed draws the same noise as ``step`` then
  ``sample_latent`` would.

A row's noise is taken only for a kept frame, in every adapter: one seed, one noise
sequence, whichever adapter runs it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pocketcli.engine.chunk import ChunkRun
from pocketcli.engine.noise import Peekable
from pocketcli.runtimes.base import (
    BatchedRuntime,
    Runtime,
    SamplingRuntime,
    batching,
    sampling,
)


@dataclass(eq=False)
class RowWork:
    """One row's frame in a tick: what the model needs, then what it gave."""

    run: ChunkRun
    noise: Peekable
    decode_steps: int
    eos: float = float("nan")
    kept: bool = False
    latent: np.ndarray | None = None  # set for a kept frame
    error: Exception | None = None  # this row's own failure (its noise source)

    def keep(self, eos: float) -> bool:
        """Applies the EOS rule to this frame's logit (False: its chunk ends here)."""
        self.eos = eos
        self.kept = self.run.take_output(eos)
        return self.kept

    def peek_noise(self) -> np.ndarray | None:
        """The frame's noise, not yet taken (None: the source failed, ``error`` says why)."""
        try:
            return self.noise.peek(self.run.latent_dim)
        except Exception as exc:
            self.error = exc
            return None

    def take_noise(self) -> np.ndarray | None:
        """The frame's noise, taken (None: the source failed, ``error`` says why)."""
        try:
            return self.noise(self.run.latent_dim)
        except Exception as exc:
            self.error = exc
            return None


class RowCalls:
    """Any runtime, one row at a time: ``step`` (with the text prefill on a chunk's
    first frame), the EOS rule, then ``sample_latent`` for a kept frame."""

    batched_calls = 0  # FlowLM calls that advanced several rows at once

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    def run(self, rows: Sequence[RowWork], together: bool = False) -> None:
        """Fills each row's EOS logit and kept latent (``together``: the tick has rows
        beyond these; only the batched adapter minds)."""
        for row in rows:
            z, eos = self._step(row.run)
            if row.keep(eos):
                self._sample(row, z)

    def _step(self, run: ChunkRun) -> tuple[np.ndarray, float]:
        if run.first:  # the text prefill and the BOS frame in one call
            return self.runtime.prefill_then_step(run.seq, run.text, run.latent)
        return self.runtime.step(run.seq, run.latent)

    def _sample(self, row: RowWork, z: np.ndarray) -> None:
        noise = row.take_noise()
        if noise is not None:
            row.latent = self.runtime.sample_latent(z, noise, row.decode_steps)


class BatchedCalls(RowCalls):
    """A runtime with batched calls: a tick of several rows is one FlowLM call for
    the rows under way (a chunk's first frame keeps its own call: its prefill) and
    one flow-head call per ``decode_steps`` among the kept rows."""

    def __init__(self, runtime: Runtime, batched: BatchedRuntime) -> None:
        super().__init__(runtime)
        self.batched = batched
        self.batch = batched.start_batch()

    def run(self, rows: Sequence[RowWork], together: bool = False) -> None:
        if len(rows) < 2 and not together:
            super().run(rows)
            return
        z = self._steps(rows)
        kept = [row for row in rows if row.keep(float(z[id(row)][1]))]
        by_steps: dict[int, list[tuple[RowWork, np.ndarray]]] = {}
        for row in kept:
            noise = row.take_noise()
            if noise is not None:
                by_steps.setdefault(row.decode_steps, []).append((row, noise))
        for steps, group in by_steps.items():
            made = self.batched.sample_latent_batch(
                np.stack([z[id(row)][0] for row, _ in group]),
                np.stack([noise for _, noise in group]),
                steps,
            )
            for i, (row, _) in enumerate(group):
                row.latent = made[i]

    def _steps(self, rows: Sequence[RowWork]) -> dict[int, tuple[np.ndarray, float]]:
        """Every row's ``(z, eos)``, by ``id`` of its work."""
        out: dict[int, tuple[np.ndarray, float]] = {}
        stepping = [row for row in rows if not row.run.first]
        if stepping:
            zs, logits = self.batched.step_batch(
                self.batch,
                [row.run.seq for row in stepping],
                np.stack([row.run.latent for row in stepping]),
            )
            out.update((id(row), (zs[i], float(logits[i]))) for i, row in enumerate(stepping))
            self.batched_calls += len(stepping) > 1
        for row in rows:
            if row.run.first:
                out[id(row)] = self._step(row.run)
        return out


class SampledCalls(RowCalls):
    """A runtime whose FlowLM call samples the latent too, one row at a time."""

    def __init__(self, runtime: Runtime, sampler: SamplingRuntime) -> None:
        super().__init__(runtime)
        self.sampler = sampler

    def run(self, rows: Sequence[RowWork], together: bool = False) -> None:
        for row in rows:
            noise = row.peek_noise()
            if noise is None:
                continue
            run, steps = row.run, row.decode_steps
            if run.first:
                made = self.sampler.prefill_then_step_sampled(
                    run.seq, run.text, run.latent, noise, steps
                )
            else:
                made = self.sampler.step_sampled(run.seq, run.latent, noise, steps)
            if row.keep(made[1]):
                row.take_noise()  # the peeked vector: this frame's
                row.latent = made[0]


def row_calls(runtime: Runtime, batched: bool = True) -> RowCalls:
    """The adapter for ``runtime`` (``batched`` False: one row at a time even when the
    runtime has batched calls)."""
    sampler = sampling(runtime)
    if sampler is not None:
        return SampledCalls(runtime, sampler)
    calls = batching(runtime) if batched else None
    return BatchedCalls(runtime, calls) if calls is not None else RowCalls(runtime)
