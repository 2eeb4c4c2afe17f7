"""Description of a state tensor that a stateful graph threads through its calls."""

from __future__ import annotations

import math
from dataclasses import dataclass

from pocketcli.config_bounds import whole
from pocketcli.errors import ConfigError

# The batched step's output of the word heads' attention logits (issue 35; built in
# flowlm_graphs, read by the ONNX runtime: here so that speaking never imports onnx).
HEAD_SCORES = "head_scores"
# The fused batched step's caches after a call (issue 34): the runtime binds each to the
# buffer it fed as ``key_cache_i``/``value_cache_i``, so the graph writes in place.
PRESENT_KEY = "present_key_{}"
PRESENT_VALUE = "present_value_{}"

# A state of the largest published Mimi decoder holds 128,000 numbers (8 heads x 250
# positions x 64); a state past these is not a model's (README, "Bounds").
MAX_STATE_DIMS = 8
MAX_STATE_DIM = 1 << 16
MAX_STATE_SIZE = 1 << 22
DTYPES = ("float32", "int64", "bool")


@dataclass(frozen=True)
class StateSpec:
    """One state tensor: the host initialises it with zeros of this shape."""

    name: str
    shape: tuple[int, ...]
    dtype: str = "float32"

    def to_dict(self) -> dict:
        return {"name": self.name, "shape": list(self.shape), "dtype": self.dtype}

    @classmethod
    def from_dict(cls, d: dict) -> StateSpec:
        """A state's description, its shape bounded before anything is allocated for it."""
        name, shape, dtype = d["name"], d["shape"], d.get("dtype", "float32")
        if not isinstance(name, str) or not name:
            raise ConfigError(f"a state's name is {repr(name)[:40]}, not a name")
        where = f"state {name[:40]!r} shape"
        if not isinstance(shape, list) or len(shape) > MAX_STATE_DIMS:
            raise ConfigError(f"{where} is not a list of at most {MAX_STATE_DIMS} sizes")
        dims = tuple(whole(where, n, 0, MAX_STATE_DIM) for n in shape)
        if math.prod(dims) > MAX_STATE_SIZE:
            raise ConfigError(f"{where} {list(dims)} holds more than {MAX_STATE_SIZE} numbers")
        if dtype not in DTYPES:
            raise ConfigError(f"state {name[:40]!r} dtype is {repr(dtype)[:40]}")
        return cls(name, dims, dtype)
