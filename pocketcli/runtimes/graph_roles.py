"""A graph is checked against its role before it is run: the inputs the runtime feeds,
and the sizes the pack's description promises, are the graph's. A bundle whose
``flow_lm_flow.onnx`` is really a Mimi decoder, or a ``pack.json`` that claims more
layers than its FlowLM has, is then one line naming the file, not ONNX Runtime's
"Required inputs ..." or an allocation sized by a lie."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pocketcli.errors import PackError


@dataclass(frozen=True)
class Role:
    """What a graph of one role takes: ``required`` inputs, and ``optional`` ones."""

    what: str  # "a Mimi decoder", for messages
    required: frozenset[str]
    optional: frozenset[str] = field(default_factory=frozenset)


def role(what: str, required: Iterable[str], optional: Iterable[str] = ()) -> Role:
    return Role(what, frozenset(required), frozenset(optional))


def _listed(names: Sequence[str]) -> str:
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def check_role(
    session: Any, path: Path, expected: Role, error: type[PackError] = PackError
) -> None:
    """``session``'s inputs are exactly ``expected``'s (its required ones, and no input
    it would not be fed); else ``error`` naming ``path``."""
    names = [i.name for i in session.get_inputs()]
    missing = sorted(expected.required - set(names))
    extra = sorted(set(names) - expected.required - expected.optional)
    if not missing and not extra:
        return
    problem = f"it has no input {_listed(missing)}" if missing else ""
    if extra:
        problem += ("; " if problem else "") + f"it takes {_listed(extra)}"
    raise error(f"{path} is not {expected.what} of this model: {problem}")


def check_trailing_dims(
    session: Any,
    path: Path,
    wanted: dict[str, Sequence[int | None]],
    source: str,
    error: type[PackError] = PackError,
) -> None:
    """Each named input's last dimensions are ``wanted`` where both are fixed numbers
    (None: any): what ``source`` (pack.json, bundle.json) says of them is the graph's."""
    for i in session.get_inputs():
        want = wanted.get(i.name)
        if want is None:
            continue
        dims = list(i.shape)[-len(want) :] if want else []
        if len(i.shape) < len(want) or any(
            isinstance(d, int) and w is not None and d != w for d, w in zip(dims, want, strict=True)
        ):
            said = [w if w is not None else "any" for w in want]
            raise error(
                f"{path} does not fit {source}: {i.name} is {i.shape}, {source} says {said}"
            )
