"""Pauses and SSML: text split into `Speech` and `Pause` items.

Inline markers work in any text: `[pause]` is a pause of
`DEFAULT_PAUSE_SECONDS` (0.5 s), `[pause:500ms]`, `[pause:1.5s]` and
`[pause:1.5]` (seconds) give the length. Text that starts with `<speak>`
(or any text with ``ssml=True``) is read as SSML instead; see
`pocketcli.normalize.ssml` for the supported subset.

A pause is exact silence between chunks, so text is never merged across
one: the items alternate as written. Pauses above `MAX_PAUSE_SECONDS` are
capped, with a warning. Warnings (capped pauses, ignored SSML tags) go to
the `on_warning` callback, one message per call, so callers decide whether
to print them; nothing is sent to the `warnings` or `logging` modules.
Malformed markup raises `MarkupError` naming the line and column.
"""

from __future__ import annotations

import re

from pocketcli import defaults
from pocketcli.normalize.languages import resolve
from pocketcli.normalize.ssml import parse_ssml
from pocketcli.normalize.timeline import (
    DEFAULT_PAUSE_SECONDS,
    MarkupError,
    Pause,
    Speech,
    Timeline,
    Warn,
    line_and_column,
    parse_duration,
)

__all__ = ["parse_markup"]

_INLINE = re.compile(r"\[pause(?::(?P<length>[^\]\n]*))?\]", re.IGNORECASE)
_SSML_START = re.compile(r"\s*(?:<\?xml[^>]*\?>\s*)?<speak[\s>/]")


def _inline(text: str, warn: Warn) -> list[Speech | Pause]:
    timeline = Timeline(warn)
    done = 0
    for match in _INLINE.finditer(text):
        timeline.say(text[done : match.start()])
        done = match.end()
        line, column = line_and_column(text, match.start())
        if match["length"] is None:
            seconds: float | None = DEFAULT_PAUSE_SECONDS
        else:
            seconds = parse_duration(match["length"])
        if seconds is None:
            raise MarkupError(
                f"bad pause length {match['length']!r} (use e.g. [pause:500ms] or [pause:1.5s])",
                line,
                column,
            )
        timeline.pause(seconds, f"at line {line}, column {column}")
    timeline.say(text[done:])
    return timeline.items()


def parse_markup(
    text: str,
    *,
    ssml: bool | None = None,
    language: str = defaults.LANGUAGE,
    on_warning: Warn | None = None,
) -> list[Speech | Pause]:
    """Split `text` into speech and pauses (see the module docstring).

    `ssml`: True reads SSML, False reads only `[pause]` markers, None (the
    default) reads SSML when the text starts with `<speak>`. `language` (a
    pockettts id) is how `<say-as>` content is said. Raises `MarkupError`
    for malformed markup and `UnknownLanguageError` for a bad language,
    both `UserError`s.
    """
    lang = resolve(language)
    warn = on_warning if on_warning is not None else (lambda message: None)
    text = text.encode("utf-8", "replace").decode("utf-8")  # lone surrogates
    if ssml is None:
        ssml = _SSML_START.match(text) is not None
    if ssml:
        return parse_ssml(text, lang, warn)
    return _inline(text, warn)
