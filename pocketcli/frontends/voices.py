"""Which voice a request means, without ever letting a request name a path or a URL.

A ``voice`` (or pocket-tts's ``voice_url``) is looked up, in order, as:

1. empty, or the default voice's listed id: the server's default voice;
2. a cloned voice's id (``clone-<hash>``, returned by ``POST /v1/voices``);
3. a file of the server's voice folder (``--voice-dir``), by its stem: the
   folder is listed and the name compared with the entries, so no path is
   ever built from the request (``../x`` or ``/etc/passwd`` match nothing);
4. a built-in voice (the pack's voice files, the catalog's voices);
5. the ``hf://`` address of a built-in voice's recording (as pocket-tts's web
   page suggests) or of its pinned voice state: that built-in voice;
6. one of OpenAI's voice names (alloy, nova, ...): the default voice.

Anything else, any other URL included, is refused: the server fetches nothing
a request names.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from pocketcli.frontends.backend import Backend

if TYPE_CHECKING:
    from pocketcli.voices.state import VoiceState

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
CLONE_PREFIX = "clone-"
VOICE_SUFFIXES = (".safetensors", ".bin")
OPENAI_VOICES = (
    "alloy",
    "ash",
    "ballad",
    "coral",
    "echo",
    "fable",
    "nova",
    "onyx",
    "sage",
    "shimmer",
    "verse",
    "marin",
    "cedar",
)


class VoiceNotFound(LookupError):
    """The request names no voice this server has (the message says which exist)."""


class VoiceUnreadable(Exception):
    """A voice file of the server's folder cannot be loaded (the log says why and where)."""


@dataclass(frozen=True)
class Resolved:
    state: VoiceState | None
    name: str
    source: str  # default, cloned, folder, builtin, openai


@dataclass(frozen=True)
class ClonedVoice:
    state: VoiceState
    seconds: float  # of the recording, used for the voice


class ClonedShelf(Protocol):
    """Where cloned voices are kept by id: this process's memory (``LocalShelf``), or,
    under Ray Serve, one actor every replica asks (``pocketcli.serve.rayserve``)."""

    def get(self, voice_id: str) -> ClonedVoice | None: ...
    def put(self, voice_id: str, voice: ClonedVoice) -> None: ...
    def forget(self, voice_id: str) -> bool: ...
    def ids(self) -> list[str]: ...  # the most recently used first


class LocalShelf:
    """Cloned voices in memory, the last ``limit`` used (least recently used go first)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._voices: OrderedDict[str, ClonedVoice] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, voice_id: str) -> ClonedVoice | None:
        with self._lock:
            voice = self._voices.get(voice_id)
            if voice is not None:
                self._voices.move_to_end(voice_id)
            return voice

    def put(self, voice_id: str, voice: ClonedVoice) -> None:
        with self._lock:
            self._voices[voice_id] = voice
            self._voices.move_to_end(voice_id)
            while len(self._voices) > self.limit:
                self._voices.popitem(last=False)

    def forget(self, voice_id: str) -> bool:
        with self._lock:
            return self._voices.pop(voice_id, None) is not None

    def ids(self) -> list[str]:
        with self._lock:
            return list(reversed(self._voices))


class VoiceBook:
    """The voices one server offers; thread-safe (voices load on worker threads)."""

    def __init__(
        self,
        backend: Backend,
        voice_dir: Path | None,
        max_cloned: int = 0,
        shelf: ClonedShelf | None = None,
    ) -> None:
        self.backend = backend
        self.voice_dir = voice_dir.resolve() if voice_dir is not None else None
        self.max_cloned = max_cloned
        self._shelf: ClonedShelf = shelf if shelf is not None else LocalShelf(max_cloned)
        self._folder: dict[str, tuple[tuple[int, int], VoiceState]] = {}
        self._lock = threading.Lock()
        self._kinds: dict[Path, tuple[tuple[int, int], bool]] = {}  # is it a voice file?

    # -- lookup -------------------------------------------------------------
    def resolve(self, name: str | None) -> Resolved:
        name = (name or "").strip()
        if not name or name == self.backend.default_voice_name:  # the id ``listing`` gives it
            return Resolved(self.backend.default_voice, self.backend.default_voice_name, "default")
        if name.startswith(CLONE_PREFIX):
            cloned = self._shelf.get(name)
            if cloned is None:
                raise VoiceNotFound(
                    f"no cloned voice {name!r} on this server (ids are kept in memory, "
                    f"the last {self.max_cloned}): upload the recording again to POST /v1/voices"
                )
            return Resolved(cloned.state, name, "cloned")
        if NAME.fullmatch(name) and ".." not in name:
            found = self._folder_voice(name)
            if found is not None:
                return Resolved(found, name, "folder")
            builtin = self._builtin_name(name)
            if builtin is not None:
                return Resolved(self.backend.builtin_voice(builtin), builtin, "builtin")
            if name.lower() in OPENAI_VOICES:
                return Resolved(
                    self.backend.default_voice, self.backend.default_voice_name, "openai"
                )
        pinned = self._pinned(name)
        if pinned is not None:
            return Resolved(self.backend.builtin_voice(pinned), pinned, "builtin")
        raise VoiceNotFound(self._unknown_message(name))

    def _builtin_name(self, name: str) -> str | None:
        from pocketcli.store.catalog import canonical_voice

        names = self.backend.builtin_names()
        canonical = canonical_voice(name)
        return canonical if canonical in names else None

    def _pinned(self, url: str) -> str | None:
        """The built-in voice whose recording or voice state is at this hf:// address."""
        if not url.startswith("hf://"):
            return None
        from pocketcli.options import DEFAULT_LANGUAGE
        from pocketcli.store.catalog import catalog

        names = self.backend.builtin_names()
        cat = catalog()
        language = self.backend.language or DEFAULT_LANGUAGE
        for name in names:
            info = cat.voices.get(name)
            if info is not None and info.audio == url:
                return name
            if url == cat.voice_state.format(language=language, voice=name):
                return name
        return None

    def _folder_entries(self) -> dict[str, Path]:
        """Voice files directly in the folder, by stem (symlinks out of it are skipped)."""
        if self.voice_dir is None:
            return {}
        entries: dict[str, Path] = {}
        try:
            with os.scandir(self.voice_dir) as it:
                for entry in it:
                    try:
                        if self._is_voice_entry(entry):
                            entries.setdefault(os.path.splitext(entry.name)[0], Path(entry.path))
                    except (OSError, RuntimeError):  # a link loop, a file gone meanwhile
                        continue  # not a voice; the folder's other voices still are
        except OSError:
            return {}
        return entries

    def _is_voice_entry(self, entry: os.DirEntry) -> bool:
        """A regular file (or a link to one inside the folder) with a voice's suffix, and
        not a model checkpoint."""
        if os.path.splitext(entry.name)[1].lower() not in VOICE_SUFFIXES or not entry.is_file():
            return False
        real = Path(entry.path).resolve()
        if real.parent != self.voice_dir and self.voice_dir not in real.parents:
            return False
        return self._holds_a_voice(real)

    def _holds_a_voice(self, path: Path) -> bool:
        """False for a safetensors file whose tensors are no voice's (a model checkpoint
        left in the folder); other files are voices until loading one says otherwise."""
        if path.suffix.lower() != ".safetensors":
            return True
        try:
            st = path.stat()
        except OSError:
            return True
        key = (st.st_mtime_ns, st.st_size)
        with self._lock:
            known = self._kinds.get(path)
        if known is not None and known[0] == key:
            return known[1]
        from pocketcli.tensorfile import TensorFile
        from pocketcli.voices.state import STATE_KEY

        try:
            with TensorFile(path) as tensors:  # its header only
                names = list(tensors.tensors)
        except Exception:
            return True  # damaged: listed, and named as such when asked for
        voice = any(n == "audio_prompt" or STATE_KEY.match(n) for n in names)
        with self._lock:
            self._kinds[path] = (key, voice)
        return voice

    def _folder_voice(self, name: str) -> VoiceState | None:
        path = self._folder_entries().get(name)
        if path is None:
            return None
        st = path.stat()
        key = (st.st_mtime_ns, st.st_size)
        with self._lock:
            cached = self._folder.get(name)
        if cached is not None and cached[0] == key:
            return cached[1]
        try:
            state = self.backend.load_voice_file(path)
        except Exception as exc:  # any damage, even one Python itself chokes on
            from pocketcli.frontends import logs

            logs.logger().error(
                "voice file unreadable", extra={"path": str(path), "error": _said(exc)}
            )
            raise VoiceUnreadable(
                f"the server's voice {name!r} cannot be loaded: its file is damaged "
                "(the server's log says more)"
            ) from None
        with self._lock:
            self._folder[name] = (key, state)
        return state

    def _unknown_message(self, name: str) -> str:
        shown = name if len(name) <= 80 else name[:77] + "..."
        default = f"{self.backend.default_voice_name} (the default)"
        others = sorted({*self._folder_entries(), *self.backend.builtin_names()})
        cloned = self._shelf.ids()[:3]  # the most recently used
        names = [default, *[n for n in others if n != self.backend.default_voice_name]][:40]
        listed = ", ".join([*names, *cloned])
        if self.max_cloned > 0:  # only where voices can be cloned (HTTP's POST /v1/voices)
            listed += ", or a cloned voice's id"
        if "://" in name or "/" in name or "\\" in name:
            return (
                f"voice {shown!r} is not one of this server's voices: it fetches no URL and "
                f"reads no path a request names; its voices: {listed}"
            )
        return f"unknown voice {shown!r}; this server's voices: {listed}"

    # -- listing ------------------------------------------------------------
    def listing(self) -> list[dict[str, str]]:
        out = [{"id": self.backend.default_voice_name, "object": "voice", "source": "default"}]
        seen = {self.backend.default_voice_name}
        for name in sorted(self._folder_entries()):
            if name not in seen:
                out.append({"id": name, "object": "voice", "source": "folder"})
                seen.add(name)
        for name in self.backend.builtin_names():
            if name not in seen:
                out.append({"id": name, "object": "voice", "source": "builtin"})
                seen.add(name)
        cloned = self._shelf.ids()  # the most recently used first
        out += [{"id": name, "object": "voice", "source": "cloned"} for name in cloned]
        return out

    # -- cloned voices --------------------------------------------------------
    @staticmethod
    def clone_id(data: bytes) -> str:
        """Same recording, same id: a repeated upload is a cache hit."""
        return CLONE_PREFIX + hashlib.sha256(data).hexdigest()[:24]

    def cloned(self, voice_id: str) -> ClonedVoice | None:
        return self._shelf.get(voice_id)

    def keep_cloned(self, voice_id: str, state: VoiceState, seconds: float) -> None:
        self._shelf.put(voice_id, ClonedVoice(state, seconds))

    def forget_cloned(self, voice_id: str) -> bool:
        return self._shelf.forget(voice_id)


def _said(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"
