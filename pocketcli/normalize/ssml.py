"""The SSML subset: `<speak>`, `<break>`, `<sub>`, `<say-as>`, `<p>` and `<s>`.

- `<break time="500ms"/>` or `time="1.5s"`; `<break strength="..."/>` with
  the lengths of `BREAK_STRENGTHS` (none 0, x-weak 0.1 s, weak 0.25 s,
  medium 0.5 s, strong 1 s, x-strong 2 s); a bare `<break/>` is medium;
  `time` wins over `strength`.
- `<sub alias="World Wide Web">WWW</sub>` says the alias.
- `<say-as interpret-as="...">` says its content as `pocketcli.normalize.sayas` reads it.
- `<p>` and `<s>` are sentence boundaries: the text before them ends with a
  sentence mark, so the chunker splits there. They add no pause.
- Any other element is ignored with a warning; its text is still spoken.

The parser is expat, so a malformed document is a `MarkupError` with expat's
line and column. Text not wrapped in `<speak>` (with ``ssml=True``) is
wrapped, and positions are still those of the text as given.
"""

from __future__ import annotations

from xml.parsers import expat

from pocketcli.normalize.languages.base import Language
from pocketcli.normalize.sayas import say_as
from pocketcli.normalize.timeline import (
    BREAK_STRENGTHS,
    MarkupError,
    Pause,
    Speech,
    Timeline,
    Warn,
    parse_duration,
)

__all__ = ["parse_ssml"]

_WRAPPER = "<speak>"


class _Reader:
    """expat handlers that feed a `Timeline`."""

    def __init__(self, parser: expat.XMLParserType, lang: Language, warn: Warn, shift: int) -> None:
        self.parser = parser
        self.lang = lang
        self.warn = warn
        self.shift = shift  # columns added on line 1 by the wrapper
        self.timeline = Timeline(warn)
        self.stack: list[tuple[str, dict[str, str]]] = []
        self.collected: list[str] = []  # text inside <say-as>

    def where(self) -> tuple[int, int]:
        line = self.parser.CurrentLineNumber
        column = self.parser.CurrentColumnNumber + 1
        return line, column - self.shift if line == 1 else column

    def _silenced(self) -> bool:
        return any(name == "sub" and "alias" in attrs for name, attrs in self.stack)

    def start(self, name: str, attrs: dict[str, str]) -> None:
        line, column = self.where()
        if self.stack and self.stack[-1][0] == "say-as":
            self.warn(f"<{name}> inside <say-as> at line {line}, column {column} ignored")
        elif name == "break":
            self.timeline.pause(
                self._break_seconds(attrs, line, column), f"at line {line}, column {column}"
            )
        elif name in ("p", "s"):
            self.timeline.end_sentence()
        elif name == "sub" and "alias" in attrs:
            if not self._silenced():
                self.timeline.say(f" {attrs['alias']} ")
        elif name == "say-as":
            if "interpret-as" not in attrs:
                self.warn(f"<say-as> without interpret-as at line {line}, column {column}")
            self.collected = []
        elif name not in ("speak", "sub"):
            self.warn(f"ignored SSML tag <{name}> at line {line}, column {column}")
        elif name == "sub":
            self.warn(f"<sub> without alias at line {line}, column {column}")
        self.stack.append((name, attrs))

    def _break_seconds(self, attrs: dict[str, str], line: int, column: int) -> float:
        if "time" in attrs:
            seconds = parse_duration(attrs["time"])
            if seconds is None:
                raise MarkupError(
                    f"bad <break time={attrs['time']!r}> (use e.g. 500ms or 1.5s)", line, column
                )
            return seconds
        strength = attrs.get("strength", "medium")
        if strength not in BREAK_STRENGTHS:
            raise MarkupError(
                f"bad <break strength={strength!r}> (one of {', '.join(BREAK_STRENGTHS)})",
                line,
                column,
            )
        return BREAK_STRENGTHS[strength]

    def end(self, name: str) -> None:
        _, attrs = self.stack.pop()
        if name in ("p", "s"):
            self.timeline.end_sentence()
        elif name == "say-as" and not self._silenced():
            content = "".join(self.collected)
            said = (
                say_as(
                    content,
                    attrs.get("interpret-as", ""),
                    self.lang,
                    attrs.get("format"),
                    self.warn,
                )
                if "interpret-as" in attrs
                else content
            )
            self.timeline.say(f" {said} ", written=f" {content} ")  # captioned as written

    def text(self, data: str) -> None:
        if self._silenced():
            return
        if any(name == "say-as" for name, _ in self.stack):
            self.collected.append(data)
        else:
            self.timeline.say(data)


def parse_ssml(text: str, lang: Language, warn: Warn) -> list[Speech | Pause]:
    """Speech and pauses of an SSML document (see the module docstring)."""
    stripped = text.lstrip()
    wrap = not (stripped.startswith("<speak") or stripped.startswith("<?xml"))
    parser = expat.ParserCreate()
    reader = _Reader(parser, lang, warn, len(_WRAPPER) if wrap else 0)
    parser.StartElementHandler = reader.start
    parser.EndElementHandler = reader.end
    parser.CharacterDataHandler = reader.text
    document = f"{_WRAPPER}{text}</speak>" if wrap else text
    try:
        parser.Parse(document, True)
    except expat.ExpatError as exc:
        line, column = exc.lineno, exc.offset + 1
        if wrap and line == 1:
            column = max(1, column - len(_WRAPPER))
        raise MarkupError(f"malformed SSML ({expat.ErrorString(exc.code)})", line, column) from None
    return reader.timeline.items()
