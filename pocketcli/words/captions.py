"""Timed words as files: a JSON list, and captions of a few words a cue (SubRip, WebVTT)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from pocketcli.words.align import Word

CAPTION_KINDS = {".srt": "srt", ".vtt": "vtt"}
# A cue: at most this many words, and at most this long, as subtitles are read.
CUE_WORDS = 7
CUE_SECONDS = 3.5


def word_row(word: Word) -> dict[str, str | float]:
    """One word as every front end sends it: ``{"word", "start", "end"}``, seconds to the ms."""
    return {"word": word.word, "start": round(word.start, 3), "end": round(word.end, 3)}


def words_json(words: Sequence[Word]) -> str:
    """``[{"word", "start", "end"}, ...]``, times in seconds to the millisecond."""
    return json.dumps([word_row(w) for w in words], ensure_ascii=False, indent=1) + "\n"


def cues(words: Sequence[Word]) -> list[tuple[float, float, str]]:
    """Consecutive words in cues of at most ``CUE_WORDS`` words and ``CUE_SECONDS``."""
    out: list[tuple[float, float, str]] = []
    group: list[Word] = []
    for word in words:
        if group and (len(group) == CUE_WORDS or word.end - group[0].start > CUE_SECONDS):
            out.append((group[0].start, group[-1].end, " ".join(w.word for w in group)))
            group = []
        group.append(word)
    if group:
        out.append((group[0].start, group[-1].end, " ".join(w.word for w in group)))
    return out


def _clock(seconds: float, mark: str) -> str:
    ms = int(round(seconds * 1000))
    h, rest = divmod(ms, 3_600_000)
    m, rest = divmod(rest, 60_000)
    s, ms = divmod(rest, 1000)
    return f"{h:02d}:{m:02d}:{s:02d}{mark}{ms:03d}"


def captions(words: Sequence[Word], kind: str) -> str:
    """The words as a caption file of ``kind`` ("srt" or "vtt")."""
    mark = "," if kind == "srt" else "."
    blocks = []
    for n, (start, end, text) in enumerate(cues(words), start=1):
        timing = f"{_clock(start, mark)} --> {_clock(end, mark)}"
        blocks.append(f"{n}\n{timing}\n{text}\n" if kind == "srt" else f"{timing}\n{text}\n")
    head = "" if kind == "srt" else "WEBVTT\n\n"
    return head + "\n".join(blocks)


def caption_kind(path: str | Path) -> str | None:
    """ "srt" or "vtt" by the file's extension (None: neither)."""
    return CAPTION_KINDS.get(Path(path).suffix.lower())


def write_word_files(words: Sequence[Word], files: dict[str, Path]) -> None:
    """``files["words"]`` (a JSON list) and ``files["captions"]`` (.srt or .vtt), each
    whole or not at all (written beside, then renamed over the name)."""
    from pocketcli.atomic import atomic_path

    for kind, target in files.items():
        if kind == "words":
            body = words_json(words)
        else:
            body = captions(words, caption_kind(target) or "vtt")
        with atomic_path(target) as tmp:
            tmp.write_text(body, encoding="utf-8")


def print_captions(words: Sequence[Word], stream: TextIO) -> None:
    """``--captions -``: the WebVTT a ``.vtt`` file of ``words`` holds, byte for byte
    (UTF-8, whatever the locale's encoding)."""
    stream.flush()
    stream.buffer.write(captions(words, "vtt").encode("utf-8"))
    stream.buffer.flush()


def print_words(words: Sequence[Word], stream: TextIO) -> None:
    """``--words -``: one JSON object a line (``word_row``), flushed as they come."""
    for word in words:
        stream.write(json.dumps(word_row(word), ensure_ascii=False) + "\n")
    stream.flush()
