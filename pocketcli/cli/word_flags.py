"""``--words`` and ``--captions``: where a run's timed words go (issue 35).

Each takes a FILE, or a format name meaning "beside the audio, with its stem" (the
form a batch needs: one file per line), or nothing at all (the same, in the default
format), as whisper's ``--output_format`` writes beside its outputs:

    --words a.json       a JSON list of {"word", "start", "end"}
    --words -            each word on standard output as it is decided (JSON Lines)
    --words | --words json            beside the audio: a.wav -> a.json
    --captions a.srt | --captions a.vtt
    --captions -         WebVTT on standard output once every word is known
    --captions | --captions vtt | --captions srt   beside the audio: a.wav -> a.vtt

Kept free of heavy imports: ``bare_word_flags`` runs before every command is parsed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

WORDS_FORMAT = "json"
CAPTION_FORMATS = ("vtt", "srt")  # the first: what a bare --captions writes
PRINTED = "-"
PRINTED_CAPTIONS = CAPTION_FORMATS[0]  # what --captions - prints
# What a flag given with no value means (last, or before another option).
_BARE = {"--words": WORDS_FORMAT, "--captions": CAPTION_FORMATS[0]}


def bare_word_flags(argv: list[str]) -> list[str]:
    """``--words``/``--captions`` with no value mean their format, written beside the audio
    (``--words -`` and ``--captions -`` keep their value: standard output)."""
    from pocketcli.batch.argv import fill_bare_options

    return fill_bare_options(argv, _BARE, kept=PRINTED)


@dataclass(frozen=True)
class WordOutputs:
    """What ``--words`` and ``--captions`` ask for: a file, a format written beside the
    audio, or standard output (``--words -``: words printed as they are decided;
    ``--captions -``: WebVTT, printed whole at the end)."""

    words: str | None = None
    captions: str | None = None

    @property
    def asked(self) -> bool:
        return self.words is not None or self.captions is not None

    @property
    def printed(self) -> bool:
        return self.words == PRINTED

    @property
    def captions_printed(self) -> bool:
        return self.captions == PRINTED

    @property
    def beside(self) -> bool:
        """Whether a file goes beside the audio (a format given, not a path)."""
        return self.words == WORDS_FORMAT or self.captions in CAPTION_FORMATS

    def caption_format(self) -> str | None:
        """ "srt" or "vtt" (None: no captions asked, or not a caption file's name)."""
        if self.captions is None:
            return None
        if self.captions == PRINTED:
            return PRINTED_CAPTIONS
        if self.captions in CAPTION_FORMATS:
            return self.captions
        from pocketcli.words.captions import caption_kind

        return caption_kind(self.captions)

    def files(self, audio: Path | None) -> dict[str, Path]:
        """Where the words ("words") and captions ("captions") are written, for the audio
        file ``audio`` (what goes beside it; None: no audio file, only named files)."""
        out: dict[str, Path] = {}
        if self.words is not None and self.words != PRINTED:
            if self.words != WORDS_FORMAT:
                out["words"] = Path(self.words)
            elif audio is not None:
                out["words"] = audio.with_suffix(".json")
        if self.captions is not None and self.captions != PRINTED:
            if self.captions not in CAPTION_FORMATS:
                out["captions"] = Path(self.captions)
            elif audio is not None:
                out["captions"] = audio.with_suffix("." + self.captions)
        return out

    def named(self) -> dict[str, Path]:
        """The files named by path (not beside the audio)."""
        return self.files(None)
