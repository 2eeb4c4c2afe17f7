"""Per-model text normalisation settings, read from a Kyutai config.

Each Pocket TTS model ships a YAML config whose top-level keys say how text
must be massaged before tokenization (the models were trained on text in a
particular shape). `TextRules` carries exactly those keys so that the text
front-end can be driven by the same file the weights come with.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any

__all__ = ["TextRules"]

ReplacementPairs = tuple[tuple[str, str], ...]


def _as_pairs(table: Mapping[str, str] | Iterable[tuple[str, str]] | None) -> ReplacementPairs:
    """Freeze a character table into validated (source, target) pairs.

    Kept as a tuple so that `TextRules` stays hashable; the order of the
    pairs does not matter since every source is a single, distinct character.
    """
    if table is None:
        return ()
    items = table.items() if isinstance(table, Mapping) else table
    pairs: list[tuple[str, str]] = []
    seen: set[str] = set()
    for item in items:
        try:
            source, target = item
        except (TypeError, ValueError):
            raise ValueError(
                f"replace_characters entry {item!r} is not a (char, text) pair"
            ) from None
        if not isinstance(source, str) or len(source) != 1:
            raise ValueError(f"replace_characters keys must be single characters, got {source!r}")
        if not isinstance(target, str):
            raise ValueError(
                f"replace_characters[{source!r}] must be a string (use '' to delete), "
                f"got {target!r}"
            )
        if source in seen:
            raise ValueError(f"replace_characters lists {source!r} twice")
        seen.add(source)
        pairs.append((source, target))
    return tuple(pairs)


@dataclass(frozen=True, slots=True)
class TextRules:
    """How a given model wants its text prepared; defaults match Kyutai's `Config`.

    `replace_characters` accepts a mapping or pairs and is stored as a tuple
    of (char, replacement) pairs; an empty replacement deletes the character.
    """

    pad_with_spaces_for_short_inputs: bool = False
    remove_semicolons: bool = False
    append_terminal_punctuation: bool = True
    capitalize_first_letter: bool = True
    replace_characters: ReplacementPairs = ()
    model_recommended_frames_after_eos: int | None = None

    def __post_init__(self) -> None:
        for name in (
            "pad_with_spaces_for_short_inputs",
            "remove_semicolons",
            "append_terminal_punctuation",
            "capitalize_first_letter",
        ):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be true or false, got {getattr(self, name)!r}")
        frames = self.model_recommended_frames_after_eos
        if frames is not None and (isinstance(frames, bool) or not isinstance(frames, int)):
            raise ValueError(
                f"model_recommended_frames_after_eos must be an integer or null, got {frames!r}"
            )
        object.__setattr__(self, "replace_characters", _as_pairs(self.replace_characters))

    @property
    def replacements(self) -> dict[str, str]:
        """The character table as a plain dict, e.g. for `str.maketrans`."""
        return dict(self.replace_characters)

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> TextRules:
        """Read the text settings from a parsed Kyutai config YAML.

        Only the top-level keys named like our fields are looked at; the rest
        of the config (model shapes, weights paths...) is ignored, and a
        missing key or an explicit null keeps the default.
        """
        values: dict[str, Any] = {}
        for field in fields(cls):
            value = config.get(field.name)
            if value is not None:
                values[field.name] = value
        return cls(**values)
