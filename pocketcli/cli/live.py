"""``pockettts tts --play / --device / --follow``: speech while it is being generated.

Everything goes through one ``Session``: the text (or, with ``--follow``,
each line or sentence of standard input as it completes) is enqueued, and
each frame goes, as it comes, to the sound device (``--play``) and/or to a
WAV stream on stdout (``-o -``), through the causal part of the output chain.
A file named with ``-o`` is written at the end exactly as plain ``tts``
writes it (the whole chain, peak normalising included).

End of input ends the run normally (exit 0); Ctrl-C cancels the session,
stops playback, leaves what was already written to stdout a complete
stream, and exits 130.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pocketcli.cli import clickcompat as click
from pocketcli.cli.stdio import stdout_failure
from pocketcli.text.sentences import split_ready

if TYPE_CHECKING:  # the rest is imported when a live flag is given (usage errors stay fast)
    import numpy as np

    from pocketcli.audio.playback import AudioSink
    from pocketcli.cli.word_flags import WordOutputs
    from pocketcli.options import SpeakOptions
    from pocketcli.session import Session

_READ_SIZE = 65536


@dataclass(frozen=True)
class LiveRequest:
    play: bool
    device: int | str | None
    follow: bool
    output: str | None  # None: no file; "-": WAV on stdout; else a path


def prepare_live(
    *,
    play: bool,
    device: str | None,
    follow: bool,
    text_given: bool,
    batch: bool,
    output: str | None,
    default_output: str,
) -> LiveRequest | None:
    """Checks the live flags before anything is loaded; None when none is given.
    ``output`` is ``-o`` (None: not given; then --play writes no file)."""
    if not (play or follow or device is not None):
        return None
    if device is not None and not play:
        raise click.UsageError("--device goes with --play")
    if batch:
        raise click.UsageError("--play and --follow speak one text stream: drop --input-file")
    if follow and text_given:
        raise click.UsageError("--follow reads standard input as it arrives: drop TEXT/--text")
    if follow and (sys.stdin is None or sys.stdin.closed):
        raise click.UsageError("--follow needs text on standard input")
    from pocketcli.audio.playback import check_output_device, parse_device

    chosen = parse_device(device)
    if play:
        check_output_device(chosen)
    if output is None and not play:
        output = default_output
    return LiveRequest(play, chosen, follow, output)


def run_live(
    request: LiveRequest,
    tts: Any,
    voice: Any,
    options: SpeakOptions,
    *,
    words: str | None,
    quiet: bool,
    on_warning: Callable[[str], None] | None,
    timing: Any,
    fmt: Any = None,
    word_outputs: WordOutputs | None = None,
) -> None:
    """Speaks ``words`` (or standard input, with ``follow``); fills ``timing``'s
    ``synthesis`` and ``audio`` seconds (a ``tts.Timing``). ``fmt``: the output
    format (an ``audio.output.OutputFormat``; None: from the file name, else WAV).
    ``word_outputs`` (the session times words): printed as decided (``--words -``) and
    written to their files once the session ends."""
    from pocketcli.audio.playback import PortAudioSink
    from pocketcli.session import play_session

    started = time.perf_counter()  # "total" is the run's: load, then the whole session
    sinks: list[AudioSink] = []
    session = tts.session(voice, options, on_warning=on_warning)
    try:
        if request.follow:
            _StdinReader(session, on_warning).start()
        else:
            assert words is not None
            _enqueue_checked(session, words)
            session.finish()
        if request.play:
            sinks.append(PortAudioSink(tts.sample_rate, request.device))
        if request.output == "-":
            sinks.append(_StdoutPipe(tts.sample_rate, fmt))
        elif request.output is not None:
            sinks.append(
                _FileSink(Path(request.output), fmt, tts.sample_rate, options.peak_normalized)
            )
        heard = _Heard(word_outputs)
        figures = play_session(session, sinks, on_words=heard.take if heard.wanted else None)
        for sink in sinks:
            sink.close()
        heard.write(request.output)
    except BaseException as exc:
        session.cancel()
        for sink in sinks:
            sink.abort()
        if isinstance(exc, OSError) and request.output == "-":
            # The reader went away (``| head``): quiet, as plain tts and Unix tools; a
            # full device: one line naming standard output.
            raise stdout_failure(exc) from None
        raise
    timing.synthesis = figures["synthesis"]
    timing.audio = figures["audio"] / tts.sample_rate
    if not quiet:
        where = ["speakers"] if request.play else []
        if request.output is not None:
            where.append("stdout" if request.output == "-" else request.output)
        sys.stderr.write(
            f"load {timing.load:.3f} s, first audio {figures['first_audio']:.3f} s, "
            f"audio {timing.audio:.3f} s, synthesis {timing.synthesis:.3f} s,"
            f" total {timing.load + time.perf_counter() - started:.3f} s -> "
            f"{' and '.join(where)}\n"
        )


def _enqueue_checked(session: Session, text: str) -> None:
    from pocketcli.normalize import MarkupError
    from pocketcli.text import EmptyTextError

    try:
        session.enqueue(text)
    except (MarkupError, EmptyTextError) as exc:
        raise click.UsageError(str(exc)) from None


class _Heard:
    """A live run's words: each printed as it is decided (``--words -``), all of them
    written to ``--words``/``--captions`` files (or beside ``-o FILE``, or ``--captions -``
    on standard output) at the end."""

    def __init__(self, asked: WordOutputs | None) -> None:
        self.asked = asked
        self.words: list[Any] = []

    @property
    def wanted(self) -> bool:
        return self.asked is not None and self.asked.asked

    def take(self, words: tuple) -> None:
        from pocketcli.words.captions import print_words

        self.words.extend(words)
        if self.asked is not None and self.asked.printed:
            try:
                print_words(words, sys.stdout)
            except OSError as exc:  # the reader of the words went away
                raise stdout_failure(exc) from None

    def write(self, output: str | None) -> None:
        if self.asked is None:
            return
        from pocketcli.words.captions import write_word_files

        audio = None if output is None or output == "-" else Path(output)
        write_word_files(self.words, self.asked.files(audio))
        if self.asked.captions_printed:  # --captions -: whole, once every word is known
            from pocketcli.words.captions import print_captions

            try:
                print_captions(self.words, sys.stdout)
            except OSError as exc:  # the reader of the captions went away
                raise stdout_failure(exc) from None


class _FileSink:
    """``-o FILE`` as an ``AudioSink``: written as plain ``tts`` writes it (the format
    from the name or --format, peak-normalised as a whole), frames streamed to disk."""

    def __init__(self, path: Path, fmt: Any, sample_rate: int, normalize: bool) -> None:
        from pocketcli.audio.output import open_audio_writer

        self._writer = open_audio_writer(path, fmt, sample_rate, peak_normalize=normalize)

    def write(self, audio: np.ndarray) -> None:
        self._writer.write(audio)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self._writer.finish()

    def abort(self) -> None:
        self._writer.abort()


class _StdoutPipe:
    """``-o -`` as an ``AudioSink`` in the chosen format (each write is flushed)."""

    def __init__(self, sample_rate: int, fmt: Any) -> None:
        from pocketcli.audio.output import AudioEncoder

        self._stream = AudioEncoder(sys.stdout.buffer, fmt or "wav", sample_rate, flush=True)

    def write(self, audio: np.ndarray) -> None:
        self._stream.write(audio)

    def flush(self) -> None:
        sys.stdout.buffer.flush()

    def close(self) -> None:
        self._stream.close()
        sys.stdout.buffer.flush()

    def abort(self) -> None:
        with contextlib.suppress(OSError):  # a closed pipe: nothing more to say
            sys.stdout.buffer.flush()


class _StdinReader(threading.Thread):
    """Reads standard input as it arrives and enqueues what is complete."""

    def __init__(self, session: Session, on_warning: Callable[[str], None] | None) -> None:
        super().__init__(name="pockettts-stdin", daemon=True)
        self._session = session
        self._warn = on_warning or (lambda message: None)

    def run(self) -> None:
        from pocketcli.session import SessionClosed

        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        pending = ""
        try:
            fd = sys.stdin.fileno()
            while data := os.read(fd, _READ_SIZE):
                pending += decoder.decode(data).replace("\x00", "")
                ready, pending = split_ready(pending)
                for text in ready:
                    self._say(text)
            self._say(pending + decoder.decode(b"", final=True))
        except SessionClosed:
            return
        except OSError as exc:
            self._warn(f"stopped reading standard input: {exc.strerror or exc}")
        self._session.finish()

    def _say(self, text: str) -> None:
        from pocketcli.session import SessionClosed

        try:
            self._session.enqueue(text)
        except SessionClosed:
            raise
        except ValueError as exc:  # MarkupError, EmptyTextError: this line only
            self._warn(f"skipped {text.strip()[:40]!r}: {exc}")
