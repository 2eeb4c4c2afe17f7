"""Description of a state tensor that a stateful graph threads through its calls."""

from __future__ import annotations

from dataclasses import dataclass


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
        return cls(d["name"], tuple(int(x) for x in d["shape"]), d.get("dtype", "float32"))
