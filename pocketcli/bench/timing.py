"""Per-stage timing without touching the engine: a runtime proxy that times each call.

The proxy implements the same Runtime protocol, so the engine runs unchanged;
the Mimi decoder runs on its worker thread, hence the lock.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from typing import Any

STAGES = {
    # The text prefill carries the chunk's first FlowLM step (one pass over the weights).
    "prefill_then_step": "text_prefill",
    "step": "flowlm_step",
    "sample_latent": "flow_head",
    "decode": "mimi_decode",
}


class TimedRuntime:
    def __init__(self, runtime: Any) -> None:
        self._runtime = runtime
        self._lock = threading.Lock()
        self.totals: dict[str, float] = defaultdict(float)
        self.counts: dict[str, int] = defaultdict(int)

    def reset(self) -> None:
        with self._lock:
            self.totals.clear()
            self.counts.clear()

    def per_call_ms(self) -> dict[str, float]:
        with self._lock:
            return {
                stage: 1000 * self.totals[stage] / self.counts[stage]
                for stage in STAGES.values()
                if self.counts[stage]
            }

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._runtime, name)
        stage = STAGES.get(name)
        if stage is None or not callable(target):
            return target

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return target(*args, **kwargs)
            finally:
                elapsed = time.perf_counter() - start
                with self._lock:
                    self.totals[stage] += elapsed
                    self.counts[stage] += 1

        return timed
