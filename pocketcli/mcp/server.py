"""The MCP tools, declared with the reference SDK (``mcp``, its v2 ``MCPServer``).

Every tool goes through the library as the other front ends do: voices are
looked up in ``serve``'s ``VoiceBook`` (built-in names, ``--voice-dir``
files, the default voice; never a path or URL a caller names), text through
``PocketTTS`` sessions and ``synthesize`` with ``SpeakOptions``, audio
through the library's WAV encoder and file writer. A tool's failure is one
line in an ``is_error`` result (arguments of the wrong type too: the field and
what it must be); the server keeps serving. The transport answers lines that
are no JSON-RPC message with JSON-RPC's own errors (``mcp.transport``).
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import anyio
import anyio.to_thread
import numpy as np
from mcp.server.mcpserver import Audio, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import CallToolResult, TextContent
from pydantic import Field, StrictInt

from pocketcli import __version__, defaults
from pocketcli.errors import UserError
from pocketcli.frontends.admission import (
    END,
    ERROR,
    AdmissionLimits,
    Busy,
    Cancelled,
    JobRunner,
    ModelJob,
    ShuttingDown,
    make_admission,
)
from pocketcli.frontends.turns import language_problem
from pocketcli.frontends.voices import VoiceBook, VoiceNotFound, VoiceUnreadable
from pocketcli.mcp.speaker import QueueFull, Speaker
from pocketcli.options import SEED_BOUNDS, SpeakOptions

if TYPE_CHECKING:
    from pocketcli.frontends.backend import Backend
    from pocketcli.frontends.voices import Resolved
    from pocketcli.voices.state import VoiceState


@dataclass(frozen=True)
class McpSettings:
    voice_dir: Path | None = None
    output_dir: Path | None = None  # synthesize may write files here, and nowhere else
    max_chars: int = defaults.MAX_CHARS  # text per call
    max_queue: int = defaults.MCP_MAX_QUEUE  # texts waiting for the speakers
    device: int | str | None = None  # sound output device (None: the default one)
    admission: AdmissionLimits = AdmissionLimits()  # synthesize's streams, queue, deadline

    @property
    def max_line_bytes(self) -> int:
        """A JSON-RPC line's bound: a call of ``max_chars`` characters, each escaped as
        ``\\uXXXX`` twice over (a surrogate pair), and room for the rest of the call."""
        return 12 * self.max_chars + 64 * 1024


# A seed as the CLI's --seed takes it: a whole number (not true, 2.5 or "7"), its bounds
# in the tool's schema and checked by ``SpeakOptions`` (one message everywhere).
Seed = Annotated[StrictInt | None, Field(json_schema_extra=SEED_BOUNDS)]

INSTRUCTIONS = (
    "Text to speech with Kyutai's Pocket TTS, on this machine. speak reads text aloud on the "
    "speakers (queued; interrupt=true cuts in); synthesize returns the audio as WAV."
)


class ToolServer(MCPServer):
    """The SDK's server, with a tool's failure said as ``TOOL: what went wrong`` in one
    line (arguments of the wrong type too, without pydantic's four lines), and an argument
    the tool does not take refused (the SDK drops it: ``voise`` would give the default
    voice)."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        from pydantic import ValidationError

        problem = unknown_arguments(name, arguments, await self._accepted(name))
        if problem is not None:
            raise ToolError(problem)
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(argument_problem(name, exc.__cause__)) from None
            said = str(exc)
            sdk = f"Error executing tool {name}: "  # the SDK's words before the tool's own
            if said.startswith(sdk) and not isinstance(exc, UnexpectedToolError):
                raise ToolError(f"{name}: {said[len(sdk) :]}") from None
            raise

    async def _accepted(self, name: str) -> list[str] | None:
        """The arguments tool ``name`` takes, from its input schema (None: no such tool,
        which the SDK answers)."""
        for tool in await self.list_tools():
            if tool.name == name:
                return list(tool.input_schema.get("properties", {}))
        return None


def unknown_arguments(
    tool: str, arguments: dict[str, Any], accepted: list[str] | None
) -> str | None:
    """``synthesize: unknown argument 'voise' (it takes text, voice, ...)``, or None."""
    if accepted is None:
        return None
    unknown = [repr(key)[:40] for key in arguments if key not in accepted]
    if not unknown:
        return None
    plural = "s" if len(unknown) > 1 else ""
    named = ", ".join(unknown[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
    takes = ", ".join(accepted) or "no arguments"
    return f"{tool}: unknown argument{plural} {named} (it takes {takes})"


_EXPECTED = {
    "string_type": "a string",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "int_type": "a whole number",
    "float_type": "a number",
}


def argument_problem(tool: str, error: Any) -> str:
    """The first wrong argument in one line: ``synthesize: text must be a string, not 5``."""
    first = error.errors()[0]
    field = ".".join(str(p) for p in first.get("loc", ())) or "arguments"
    kind = first.get("type", "")
    if kind == "missing":
        return f"{tool}: {field} is missing"
    expected = _EXPECTED.get(kind)
    if expected is None:
        return f"{tool}: {field}: {first.get('msg', 'invalid')}"
    return f"{tool}: {field} must be {expected}, not {repr(first.get('input'))[:40]}"


@dataclass
class _Tools:
    """What the tools share: the model, its voices, the speakers, the settings."""

    backend: Backend
    settings: McpSettings
    voices: VoiceBook
    speaker: Speaker
    runner: JobRunner  # synthesize's streams go through it, as every server's do

    def resolve(self, voice: str | None, language: str | None, text: str) -> Resolved:
        _check_text(text, self.settings.max_chars)
        problem = language_problem(self.backend.language, language)
        if problem is not None:
            raise ToolError(problem)
        try:
            return self.voices.resolve(voice)
        except VoiceNotFound as exc:
            raise ToolError(str(exc)) from None
        except VoiceUnreadable as exc:
            raise ToolError(str(exc)) from None

    def check_speech(self, text: str) -> None:
        """The text's own errors (markup, nothing to say) as a ToolError, before a stream
        is asked for: ``speak`` answers before its text is spoken."""
        try:
            self.backend.tts.script(text)
        except UserError as exc:  # MarkupError, EmptyTextError
            raise ToolError(str(exc)) from None

    def submit(
        self,
        text: str,
        voice: VoiceState | None,
        options: SpeakOptions,
        frames: Callable[[], Iterator[np.ndarray]] | None = None,
    ) -> ModelJob:
        """The stream of ``text`` (or what ``frames`` makes), submitted to the admission
        every front end shares (``synthesize`` and ``speak`` alike), its deadline counted
        from now: the admission's ``Busy`` or ``ShuttingDown`` when it is refused."""
        job = ModelJob(
            frames or (lambda: self.backend.frames(text, voice, options)),
            time.monotonic() + self.settings.admission.request_seconds,
            front="mcp",
        )
        self.runner.submit(job)
        return job

    def refused(self, exc: Busy | ShuttingDown) -> ToolError:
        """The admission's refusal as a one-line ToolError."""
        if isinstance(exc, Busy):
            return ToolError(f"{exc} (at most {self.settings.admission.max_streams} at once)")
        return ToolError("the server is stopping")

    async def spoken(
        self, text: str, voice: VoiceState | None, options: SpeakOptions, words: list | None = None
    ) -> np.ndarray:
        """The whole speech of ``text``, made as an admitted stream (busy: a ToolError);
        a call that is cancelled (its client gone) stops its stream. ``words``: a list
        that gets the speech's timed words (the model cannot time them: a ToolError)."""
        limits = self.settings.admission
        frames = None
        if words is not None:
            options = options.with_(words=True)
            frames = lambda: self._timed(text, voice, options, words)  # noqa: E731
        try:
            job = self.submit(text, voice, options, frames)
        except (Busy, ShuttingDown) as exc:
            raise self.refused(exc) from None
        parts: list[np.ndarray] = []
        try:
            while (got := await job.next())[0] != END:
                kind, value = got
                if kind == ERROR:
                    raise _tool_error(value, job, limits.request_seconds)
                parts.append(value)
        except BaseException:
            job.cancel("cancelled")
            raise
        return np.concatenate(parts) if parts else np.zeros(0, np.float32)

    def _timed(
        self, text: str, voice: VoiceState | None, options: SpeakOptions, words: list
    ) -> Iterator[np.ndarray]:
        """The stream's audio frames; each frame's words go to ``words`` as they come."""
        with closing(self.backend.tts.stream(text, voice, options)) as frames:
            for frame in frames:
                words.extend(frame.words)
                yield frame.audio


def _deadline_message(seconds: float) -> str:
    return f"no speech within the server's limit of {seconds:g} s"


def _options(speed: float, seed: int | None = None) -> SpeakOptions:
    """The call's options, checked as the library checks them (a bad value: a ToolError
    naming the argument, e.g. ``seed must be a whole number from 0 to 2^64-1, not -1``)."""
    try:
        return SpeakOptions(speed=speed, seed=seed)
    except UserError as exc:
        raise ToolError(str(exc)) from None


def _tool_error(error: BaseException, job: ModelJob, seconds: float) -> BaseException:
    if isinstance(error, Cancelled) or job.cancelled:
        if job.cancel_reason == "deadline":
            return ToolError(_deadline_message(seconds))
        return ToolError(f"stopped: {job.cancel_reason or 'cancelled'}")
    if isinstance(error, UserError):  # MarkupError, EmptyTextError, OptionsError
        return ToolError(str(error))
    return error


def build(backend: Backend, settings: McpSettings, runner: JobRunner) -> tuple[MCPServer, Speaker]:
    seconds = settings.admission.request_seconds
    speaker = Speaker(
        lambda: _device_sink(backend, settings),
        settings.max_queue,
        lambda: _deadline_message(seconds),
        busy_seconds=seconds,
    )
    voices = VoiceBook(backend, settings.voice_dir)
    tools = _Tools(backend, settings, voices, speaker, runner)
    # The SDK's own log (a multi-line panel per failed call) only for real trouble: the
    # caller already has the failure's one line in its result.
    server = ToolServer(
        "pockettts", instructions=INSTRUCTIONS, version=__version__, log_level="WARNING"
    )
    _speaker_tools(server, tools)
    _synthesize_tool(server, tools)
    return server, speaker


def _speaker_tools(server: MCPServer, tools: _Tools) -> None:
    speaker, settings = tools.speaker, tools.settings

    @server.tool()
    async def speak(
        text: str,
        voice: str | None = None,
        language: str | None = None,
        interrupt: bool = False,
        speed: float = 1.0,
    ) -> str:
        """Read text aloud on this machine's speakers. Texts queue up and play in turn;
        interrupt=true stops what is playing first. voice: one of list_voices (default:
        the server's voice); language: the server's language (see list_voices); speed:
        speaking rate, 0.25 to 4 (1.3: 30% faster), pitch kept."""
        resolved = await anyio.to_thread.run_sync(tools.resolve, voice, language, text)
        options = _options(speed)
        problem = await anyio.to_thread.run_sync(_no_device, settings.device)
        if problem is not None:
            raise ToolError(f"cannot speak here: {problem}; synthesize returns the audio instead")
        await anyio.to_thread.run_sync(tools.check_speech, text)
        if interrupt:
            speaker.stop()
        # The same admission as synthesize, from the text's turn to be made: submitted here
        # only when nothing plays or waits (busy: refused now), else once the text before
        # it has made its last frame.
        try:
            ahead = speaker.say(
                lambda: tools.submit(text, resolved.state, options), text, resolved.name
            )
        except QueueFull as exc:
            raise ToolError(str(exc)) from None
        except (Busy, ShuttingDown) as exc:
            raise tools.refused(exc) from None
        when = "now" if ahead == 0 else f"after {ahead} text{'s' if ahead > 1 else ''} before it"
        return f"speaking {len(text)} characters with voice {resolved.name} {when}"

    @server.tool()
    def stop_speaking() -> str:
        """Stop speaking now and drop every text still waiting."""
        stopped = speaker.stop()
        return f"stopped {stopped} text{'s' if stopped != 1 else ''}" if stopped else "silent"

    @server.tool()
    def status() -> dict[str, Any]:
        """Whether speech is playing, what, with which voice, and how many texts wait."""
        return speaker.status()

    @server.tool()
    def list_voices() -> dict[str, Any]:
        """The voices speak and synthesize take, and the language they speak."""
        return {
            "language": _language(tools.backend),
            "default": tools.backend.default_voice_name,
            "voices": [v["id"] for v in tools.voices.listing()],
        }


def _synthesize_tool(server: MCPServer, tools: _Tools) -> None:
    @server.tool(structured_output=False)
    async def synthesize(
        text: str,
        voice: str | None = None,
        language: str | None = None,
        path: str | None = None,
        speed: float = 1.0,
        words: bool = False,
        seed: Seed = None,
    ) -> Any:
        """Make speech and return it as WAV audio (24 kHz, 16-bit mono). path: also write it
        to this file (its suffix picks the format: .wav, .flac, .mp3, .ogg), which must be
        inside the folder the user allowed with --output-dir. speed: speaking rate, 0.25
        to 4 (1.3: 30% faster), pitch kept. words=true: also each word's start and end in
        seconds, as {"words": [{"word", "start", "end"}, ...]} (JSON text and structured
        content). seed: 0 to 2^64-1; the same text, voice and seed give the same audio
        (as pockettts tts --seed; none: fresh each call)."""
        options = _options(speed, seed)
        resolved = await anyio.to_thread.run_sync(tools.resolve, voice, language, text)
        output_dir = tools.settings.output_dir
        target = _allowed_path(path, output_dir) if path is not None else None
        timed: list | None = [] if words else None
        audio = await tools.spoken(text, resolved.state, options, timed)
        from pocketcli.audio.output import to_pcm16, wav_header

        rate = tools.backend.sample_rate
        wav = wav_header(rate, audio.size) + to_pcm16(audio).tobytes()
        note = f"{audio.size / rate:.2f} s of speech with voice {resolved.name}"
        if target is not None:
            await anyio.to_thread.run_sync(_write, target, audio, rate)
            note += f", written to {target}"
        if timed is None:
            return [Audio(data=wav, format="wav"), note]
        return _with_words(Audio(data=wav, format="wav"), note, timed)


def _with_words(audio: Audio, note: str, words: list) -> CallToolResult:
    """The audio, the note and the words: as JSON text beside them and as structured
    content (``{"words": [{"word", "start", "end"}, ...]}``, ``word_row``'s shape)."""
    import json

    from pocketcli.words.captions import word_row

    listed = {"words": [word_row(w) for w in words]}
    text = json.dumps(listed, ensure_ascii=False)
    content = [
        audio.to_audio_content(),
        TextContent(type="text", text=f"{note}, {len(words)} words timed"),
        TextContent(type="text", text=text),
    ]
    return CallToolResult(content=content, structured_content=listed)


def _write(target: Path, audio: Any, rate: int) -> None:
    from pocketcli.audio.output import format_for, write_audio

    _refuse_special(target, str(target))  # again: something may have appeared since
    try:
        write_audio(target, audio, rate, format_for(target))
    except UserError as exc:  # already names the file and the cause
        raise ToolError(str(exc)) from None
    except Exception as exc:
        raise ToolError(f"cannot write {target}: {exc}") from None


def _check_text(text: str, max_chars: int) -> None:
    if not text.strip():
        raise ToolError("text is empty")
    if len(text) > max_chars:
        raise ToolError(f"text has {len(text)} characters, over the limit of {max_chars}")


def _language(backend: Backend) -> str:
    return backend.language or defaults.LANGUAGE


def _allowed_path(path: str, output_dir: Path | None) -> Path:
    """``path`` inside the allowed folder (relative paths are taken from it), or a ToolError."""
    if output_dir is None:
        raise ToolError(
            "writing files is off: start the server as `pockettts mcp --output-dir DIR` to allow it"
        )
    root = output_dir.resolve()
    try:
        candidate = Path(path).expanduser()
        target = (candidate if candidate.is_absolute() else root / candidate).resolve()
    except (ValueError, OSError, RuntimeError) as exc:  # a NUL byte, a symlink loop
        raise ToolError(f"{path[:80]!r} is not a usable file name: {exc}") from None
    if target == root or root not in target.parents:
        raise ToolError(f"{path!r} is not inside the folder files may be written to ({root})")
    _refuse_special(target, path)
    from pocketcli.audio.output import format_for

    try:
        format_for(target)
    except Exception as exc:
        raise ToolError(f"{path!r}: {exc}") from None
    return target


def _refuse_special(target: Path, shown: str) -> None:
    """Only a regular file (or nothing) may be at ``target``: a FIFO would wait for a
    reader for ever, a device or a folder is not the caller's file to replace."""
    from pocketcli.filekind import describe_mode

    try:
        mode = os.stat(target).st_mode
    except OSError:
        return  # nothing there yet (or unreadable: the writer says why)
    if not stat.S_ISREG(mode):
        raise ToolError(f"{shown!r} is {describe_mode(mode)}, not a regular file: not written")


def _no_device(device: int | str | None) -> str | None:
    """Why speech cannot play here (no sounddevice, no PortAudio, no device), or None."""
    from pocketcli.audio.playback import PlaybackError, check_output_device

    try:
        check_output_device(device)
    except PlaybackError as exc:  # its hint (write a file, list the devices) left out
        return str(exc).split("; ")[0]
    return None


def _device_sink(backend: Backend, settings: McpSettings):  # noqa: ANN202
    from pocketcli.audio.playback import PortAudioSink

    return PortAudioSink(backend.sample_rate, settings.device)


def run(backend: Backend, settings: McpSettings) -> None:
    """Serves on stdin/stdout until the client closes them (or SIGTERM)."""
    anyio.run(_serve_stdio, backend, settings)


async def _serve_stdio(backend: Backend, settings: McpSettings) -> None:
    admitted = settings.admission
    runner = make_admission(admitted.max_queue, None, admitted.max_streams)
    server, speaker = build(backend, settings, runner)
    try:
        await _serve_lines(server, settings.max_line_bytes)
    finally:
        speaker.close()
        await anyio.to_thread.run_sync(runner.close, 10.0)


async def _serve_lines(server: MCPServer, max_line_bytes: int) -> None:
    from mcp.server.stdio import stdio_server

    from pocketcli.mcp.transport import wire

    lowlevel = server._lowlevel_server  # noqa: SLF001 - the SDK's run_stdio_async does the same
    with wire(max_line_bytes) as (stdin, stdout):
        async with stdio_server(stdin, stdout) as (read_stream, write_stream):
            options = lowlevel.create_initialization_options()
            await lowlevel.run(read_stream, write_stream, options)
