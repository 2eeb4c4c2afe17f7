"""The fields a streaming front end's request carries, as typed models: one check and
one message per field for the websocket's ``config`` and Wyoming's synthesis events,
as pydantic checks HTTP's JSON body.

A field of the wrong type is a ``FieldProblem`` naming the field and what it must be
(``temperature must be a number, not 'hot'``); values are then checked where HTTP
checks them (``SpeakOptions`` for seed and temperature, the voice book, the language).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

MIN_RATE, MAX_RATE = 8000, 48000

_Model = TypeVar("_Model", bound=BaseModel)


@dataclass(frozen=True)
class FieldProblem:
    """A field of the wrong type: ``message`` names it; the caller raises its own error."""

    message: str
    field: str


class SpeakFields(BaseModel):
    """What any request may say about its speech (names as in HTTP's speech request)."""

    model_config = ConfigDict(extra="ignore", strict=True)

    voice: str | None = None
    language: str | None = None
    seed: int | None = None  # its range is SpeakOptions' (as for HTTP)
    temperature: float | None = None
    speed: float | None = None  # speaking rate, 0.25 to 4 (SpeakOptions checks it)


class WsConfig(SpeakFields):
    """The websocket's ``config`` frame's ``data``."""

    sample_rate: int | None = Field(None, ge=MIN_RATE, le=MAX_RATE)
    format: str = "pcm"
    normalize: bool | None = None
    pauses: bool | None = None
    binary: bool = True
    words: bool = False  # word frames between the audio (a model that can time words)


_EXPECTED = {
    "string_type": "a string",
    "bool_type": "true or false",
    "int_type": "a whole number",
    "float_type": "a number",
    "int_from_float": "a whole number",
}


def checked(model: type[_Model], data: dict[str, Any]) -> _Model | FieldProblem:
    """``data`` as ``model``, or the ``FieldProblem`` of its first wrong field."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        return problem_of(exc)


def problem_of(error: ValidationError) -> FieldProblem:
    first = error.errors()[0]
    field = ".".join(str(p) for p in first.get("loc", ())) or "data"
    kind, given = first.get("type", ""), repr(first.get("input"))[:40]
    if field == "sample_rate":
        return FieldProblem(
            f"sample_rate must be a whole number from {MIN_RATE} to {MAX_RATE}, not {given}",
            field,
        )
    if field in ("temperature", "speed") and kind == "float_type":  # one kind of number
        return FieldProblem(f"{field} must be a number, not {given}", field)
    expected = _EXPECTED.get(kind)
    if expected is None:
        return FieldProblem(f"{field}: {first.get('msg', 'invalid')}", field)
    return FieldProblem(f"{field} must be {expected}, not {given}", field)
