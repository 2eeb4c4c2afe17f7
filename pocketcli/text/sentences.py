"""Text that arrives in pieces (a pipe, an LLM's tokens): which part is ready to speak.

A sentence is complete at its end mark and the space after it (or at a
full-width end mark, which needs no space), and a line at its newline; the
rest waits for more text. ``tts --follow``, the websocket and Wyoming's
streaming synthesis all cut text here, so each speaks a sentence as soon as
it is written.
"""

from __future__ import annotations

import re

_SENTENCE_END = re.compile(r"(?<=[.!?\u2026])[\"')\]\u201d\u2019]*\s+|(?<=[\u3002\uff01\uff1f])")


def split_ready(pending: str) -> tuple[list[str], str]:
    """Complete lines, and complete sentences of the line still being written;
    returns them and the unfinished rest."""
    *lines, rest = pending.split("\n")
    ends = list(_SENTENCE_END.finditer(rest))
    if ends:
        cut = ends[-1].end()
        lines.append(rest[:cut])
        rest = rest[cut:]
    return [line for line in lines if line.strip()], rest
