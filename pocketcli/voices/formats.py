"""Every published voice file format, recognised from the bytes, not the file name.

A voice file holds one of two things. A *state* is the FlowLM KV cache after
the voice prompt (ready to use). *Conditioning* is the ``[frames, d_model]``
speaker-projected prompt that still has to be prefilled through the model
(after ``bos_before_voice`` when the model has one), exactly as pocket-tts
does after encoding a recording.

- ``kyutai-state``: Kyutai 4.x voice state, safetensors with
  ``transformer.layers.N.self_attn/{cache,offset,pad,current_end}``; caches
  in F32, BF16 or F16 (what ``pocket-tts export-voice`` writes, and the
  per-language ``embeddings/<voice>.safetensors`` of 4.x);
- ``kyutai-audio-prompt``: Kyutai's 2026-01 voices, safetensors with one
  tensor ``audio_prompt`` ``[1, T, D]`` or ``[T, D]`` (F32/BF16/F16);
- ``voices-bin``: the container of the ONNX web demos: u32 count, then per
  voice a 32-byte NUL-padded name, u32 T, u32 D and T*D float32 LE;
- ``ptvb1``: the ``PTVB1`` container of the v2 web demo (KV states by name);
- ``npy``: a NumPy ``.npy`` array ``[1, T, D]`` or ``[T, D]`` (community
  ONNX runtimes);
- ``fluidaudio-bin``: FluidAudio's headerless float32 ``[T, D]`` (at most
  125 frames), recognised last, by size, when nothing else matches.

Every size, shape and dtype is checked before anything is read, so a hostile
file costs at most its own size in memory and ends in one VoiceError line.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pocketcli.errors import VoiceHint, VoiceNotChosen
from pocketcli.filekind import require_regular
from pocketcli.tensorfile import TensorFile, TensorFileError, looks_like_safetensors
from pocketcli.voices.state import (
    MAX_VOICE_FILE_BYTES,
    STATE_KEY,
    VoiceError,
    VoiceState,
    ignored_notice,
    load_voice_state,
    state_from_tensors,
)

Notice = Callable[[str], None]

BIN_MAX_FRAMES = 125  # FluidAudio's fixed 10 s encoder input
MAX_FRAMES = 4096  # any conditioning: 5.5 minutes of prompt, far past any real voice
MAX_WIDTH = 16384
MAX_CONTAINER_VOICES = 4096
NAME_BYTES = 32

FORMATS = {
    "kyutai-state": "Kyutai voice state (safetensors KV cache, pocket-tts 4.x)",
    "kyutai-audio-prompt": "Kyutai voice embedding (safetensors 'audio_prompt', 2026-01)",
    "voices-bin": "voices.bin container of the ONNX web demos",
    "ptvb1": "PTVB1 voices.bin container of the v2 web demo (KV states)",
    "npy": "NumPy .npy conditioning [1, T, D] or [T, D]",
    "fluidaudio-bin": "FluidAudio .bin (raw float32 [T, D], at most 125 frames)",
}
ACCEPTED = (
    "accepted voice files: a Kyutai voice state or 'audio_prompt' embedding (safetensors),"
    " a voices.bin or PTVB1 container, a .npy array [T, D], or FluidAudio's raw float32 .bin"
)
_AUDIO_MAGIC = (b"RIFF", b"fLaC", b"OggS", b"ID3", b"\xff\xfb", b"\xff\xf3", b"FORM")


@dataclass(frozen=True)
class VoiceEntry:
    """One voice of a file: a state (positions, layers, heads) or conditioning (frames, width)."""

    name: str | None
    kind: str  # "state" or "conditioning"
    frames: int | None  # conditioning frames, or state positions; None: raw .bin (by width)
    width: int | None  # conditioning d_model; None for states and raw .bin
    dtype: str
    layers: int | None = None
    kv_heads: int | None = None
    head_dim: int | None = None


@dataclass(frozen=True)
class VoiceFile:
    """What a voice file is, from its header (no voice data is read)."""

    path: Path
    format: str
    voices: tuple[VoiceEntry, ...]
    ignored: tuple[str, ...] = ()  # tensors next to the known ones, not used
    offsets: dict[str, tuple[int, int]] = field(default_factory=dict, repr=False)  # voices.bin

    @property
    def description(self) -> str:
        return FORMATS[self.format]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(v.name for v in self.voices if v.name is not None)

    def pick(self, name: str | None) -> VoiceEntry:
        """The voice to use: the only one, or the one called ``name`` in a container."""
        if len(self.voices) == 1 and (name is None or self.voices[0].name in (None, name)):
            return self.voices[0]
        listed = ", ".join(self.names)
        if name is None:
            raise VoiceNotChosen(
                f"{self.path} holds {len(self.voices)} voices ({listed}): choose one with"
                " {voice} NAME",
                "voice",
            )
        for entry in self.voices:
            if entry.name == name:
                return entry
        # Names are case-insensitive, like every other value, unless that is ambiguous.
        folded = [e for e in self.voices if e.name is not None and e.name.lower() == name.lower()]
        if len(folded) == 1:
            return folded[0]
        raise VoiceError(f"{self.path} has no voice {name!r}; its voices: {listed}")


# --------------------------------------------------------------------------- detection


def identify(path: str | Path) -> VoiceFile:
    """The format and voices of a file, from its content; VoiceError if it is none of them."""
    path = Path(path)
    require_regular(path, "voice file", VoiceError)  # a FIFO or /dev/zero is never opened
    size = path.stat().st_size
    if size > MAX_VOICE_FILE_BYTES:
        raise VoiceError(f"{path} is too large to be a voice file ({size} bytes)")
    with open(path, "rb") as f:
        head = f.read(64)
    if looks_like_safetensors(head, size):
        return _identify_safetensors(path)
    if head.startswith(b"PTVB1"):
        return _identify_ptvb1(path, size)
    if head.startswith(b"\x93NUMPY"):
        return _identify_npy(path)
    container = _identify_voices_bin(path, size)
    if container is not None:
        return container
    if head.startswith(_AUDIO_MAGIC):
        raise VoiceHint(
            f"{path} looks like an audio recording, not a voice file: clone a voice from it"
            f" with {{clone_voice}} (or `pockettts clone`); {ACCEPTED}",
            "clone_voice",
        )
    if size % 4:
        raise VoiceError(f"{path} matches no voice format; {ACCEPTED}")
    return VoiceFile(path, "fluidaudio-bin", (VoiceEntry(None, "conditioning", None, None, "F32"),))


def _identify_safetensors(path: Path) -> VoiceFile:
    try:
        with TensorFile(path) as f:
            tensors = f.tensors
    except TensorFileError as exc:
        raise VoiceError(str(exc)) from None
    layer_keys = [k for k in tensors if STATE_KEY.match(k)]
    if layer_keys:
        caches = [tensors[k] for k in layer_keys if k.endswith("/cache")]
        if not caches:
            raise VoiceError(f"{path}: a Kyutai voice state without any layer cache")
        first = caches[0]
        if len(first.shape) != 5:
            raise VoiceError(
                f"{path}: cache {first.name} has shape {list(first.shape)},"
                " expected [2, 1, T, heads, head_dim]"
            )
        entry = VoiceEntry(
            None,
            "state",
            first.shape[2],
            None,
            "/".join(sorted({c.dtype for c in caches})),
            layers=len(caches),
            kv_heads=first.shape[3],
            head_dim=first.shape[4],
        )
        ignored = tuple(k for k in tensors if not STATE_KEY.match(k))
        return VoiceFile(path, "kyutai-state", (entry,), ignored)
    if "audio_prompt" in tensors:
        info = tensors["audio_prompt"]
        frames, width = _conditioning_shape(path, "audio_prompt", info.shape)
        if not info.is_float:
            raise VoiceError(f"{path}: audio_prompt has dtype {info.dtype}, expected F32/F16/BF16")
        entry = VoiceEntry(None, "conditioning", frames, width, info.dtype)
        ignored = tuple(k for k in tensors if k != "audio_prompt")
        return VoiceFile(path, "kyutai-audio-prompt", (entry,), ignored)
    shown = ", ".join(list(tensors)[:3]) + (" ..." if len(tensors) > 3 else "")
    raise VoiceError(
        f"{path}: a safetensors file, but no voice (its tensors: {shown or 'none'}); {ACCEPTED}"
    )


def _conditioning_shape(path: Path, what: str, shape: tuple[int, ...]) -> tuple[int, int]:
    if len(shape) == 3 and shape[0] == 1:
        shape = shape[1:]
    if len(shape) != 2:
        raise VoiceError(f"{path}: {what} has shape {list(shape)}, expected [1, T, D] or [T, D]")
    frames, width = shape
    if not 0 < frames <= MAX_FRAMES or not 0 < width <= MAX_WIDTH:
        raise VoiceError(
            f"{path}: {what} is {frames} frames of width {width}; a voice has 1 to"
            f" {MAX_FRAMES} frames of width 1 to {MAX_WIDTH}"
        )
    return int(frames), int(width)


def _identify_voices_bin(path: Path, size: int) -> VoiceFile | None:
    """The web demos' container, or None when the sizes do not chain up to the file size."""
    if size < 4 + NAME_BYTES + 8:
        return None
    entries: list[VoiceEntry] = []
    offsets: dict[str, tuple[int, int]] = {}
    with open(path, "rb") as f:
        (count,) = struct.unpack("<I", f.read(4))
        if not 0 < count <= MAX_CONTAINER_VOICES:
            return None
        at = 4
        for _ in range(count):
            record = f.read(NAME_BYTES + 8)
            if len(record) < NAME_BYTES + 8:
                return None
            raw_name = record[:NAME_BYTES].rstrip(b"\0")
            frames, width = struct.unpack("<II", record[NAME_BYTES:])
            at += NAME_BYTES + 8
            data = frames * width * 4
            if (
                not raw_name
                or b"\0" in raw_name
                or not 0 < frames <= MAX_FRAMES
                or not 0 < width <= MAX_WIDTH
                or at + data > size
            ):
                return None
            try:
                name = raw_name.decode("utf-8")
            except UnicodeDecodeError:
                return None
            if not name.isprintable() or name in offsets:
                return None
            offsets[name] = (at, data)
            entries.append(VoiceEntry(name, "conditioning", frames, width, "F32"))
            at += data
            f.seek(at)
    if at != size:
        return None
    return VoiceFile(path, "voices-bin", tuple(entries), offsets=offsets)


_PTVB1_DTYPES = {0: ("F32", "<f4", 4), 1: ("I64", "<i8", 8), 2: ("U8", "u1", 1)}


def _read_ptvb1(
    path: Path, size: int, want: str | None
) -> tuple[dict[str, list[tuple[int, ...]]], dict[str, np.ndarray]]:
    """Walks a PTVB1 file: (name -> shapes of its layer caches, tensors of ``want``),
    every length checked."""
    names: dict[str, list[tuple[int, ...]]] = {}
    chosen: dict[str, np.ndarray] = {}
    with open(path, "rb") as f:

        def take(n: int) -> bytes:
            if f.tell() + n > size:
                raise VoiceError(f"{path}: PTVB1 container cut short (needs {n} more bytes)")
            return f.read(n)

        def text(n: int) -> str:
            try:
                value = take(n).decode("utf-8")
            except UnicodeDecodeError:
                raise VoiceError(
                    f"{path}: PTVB1 container holds a name that is not UTF-8"
                ) from None
            if not value or not value.isprintable():
                raise VoiceError(f"{path}: PTVB1 container holds an empty or unprintable name")
            return value

        take(5)
        (count,) = struct.unpack("<I", take(4))
        if not 0 < count <= MAX_CONTAINER_VOICES:
            raise VoiceError(f"{path}: PTVB1 container says it holds {count} voices")
        for _ in range(count):
            (name_len,) = struct.unpack("<H", take(2))
            name = text(name_len)
            if name in names:
                raise VoiceError(f"{path}: PTVB1 container holds voice {name!r} twice")
            names[name] = []
            (n_tensors,) = struct.unpack("<H", take(2))
            for _ in range(n_tensors):
                (key_len,) = struct.unpack("<H", take(2))
                key = text(key_len)
                code, rank = struct.unpack("<BB", take(2))
                if code not in _PTVB1_DTYPES or rank > 8:
                    raise VoiceError(
                        f"{path}: tensor {key!r} of {name!r}: dtype {code}, rank {rank}"
                    )
                dims = struct.unpack(f"<{rank}I", take(4 * rank))
                (nbytes,) = struct.unpack("<I", take(4))
                _dt, np_code, width = _PTVB1_DTYPES[code]
                if nbytes != int(np.prod(dims, dtype=np.int64)) * width:
                    raise VoiceError(
                        f"{path}: tensor {key!r} of {name!r} is {nbytes} bytes"
                        f" for shape {list(dims)}"
                    )
                data = take(nbytes)
                if key.endswith("/cache") and STATE_KEY.match(key):
                    names[name].append(tuple(dims))
                if name == want:
                    native = np.dtype(np_code).newbyteorder("=")
                    chosen[key] = np.frombuffer(data, np_code).reshape(dims).astype(native)
        if f.tell() != size:
            raise VoiceError(f"{path}: {size - f.tell()} trailing bytes after the last voice")
    return names, chosen


def _identify_ptvb1(path: Path, size: int) -> VoiceFile:
    names, _ = _read_ptvb1(path, size, None)
    entries = []
    for name, caches in names.items():
        shape = caches[0] if caches and len(caches[0]) == 5 else (None,) * 5
        entries.append(
            VoiceEntry(
                name,
                "state",
                shape[2],
                None,
                "F32",
                layers=len(caches),
                kv_heads=shape[3],
                head_dim=shape[4],
            )
        )
    return VoiceFile(path, "ptvb1", tuple(entries))


def _identify_npy(path: Path) -> VoiceFile:
    with open(path, "rb") as f:
        try:
            version = np.lib.format.read_magic(f)
            reader = {
                (1, 0): np.lib.format.read_array_header_1_0,
                (2, 0): np.lib.format.read_array_header_2_0,
            }.get(version)
            if reader is None:
                raise ValueError(f"unsupported .npy version {version}")
            shape, fortran, dtype = reader(f)
        except (ValueError, SyntaxError, TypeError) as exc:
            raise VoiceError(f"{path}: not a readable .npy file: {exc}") from None
    if dtype.kind != "f" or dtype.itemsize not in (2, 4, 8) or fortran:
        raise VoiceError(
            f"{path}: .npy array of {dtype} (order {'F' if fortran else 'C'}),"
            " expected float [1, T, D] or [T, D] in C order"
        )
    frames, width = _conditioning_shape(path, "the array", tuple(shape))
    entry = VoiceEntry(None, "conditioning", frames, width, f"F{dtype.itemsize * 8}")
    return VoiceFile(path, "npy", (entry,))


# --------------------------------------------------------------------------- reading


def read_conditioning(vf: VoiceFile, entry: VoiceEntry, d_model: int) -> np.ndarray:
    """The ``[frames, d_model]`` float32 conditioning of a conditioning voice."""
    path = vf.path
    if vf.format == "fluidaudio-bin":
        try:
            return read_conditioning_bin(path, d_model)
        except VoiceError as exc:
            if path.suffix.lower() == ".bin":
                raise
            # No header matched and the bytes are no raw .bin either: say both.
            reason = str(exc).removeprefix(f"{path}: ")
            raise VoiceError(
                f"{path} is not a readable safetensors file nor any other voice format"
                f" ({ACCEPTED}); read as FluidAudio's raw .bin: {reason}"
            ) from None
    if entry.width != d_model:
        raise VoiceError(
            f"{path}: voice {_label(entry)} is {entry.width} wide (made for a model with"
            f" d_model {entry.width}), but this model's d_model is {d_model}"
        )
    if vf.format == "kyutai-audio-prompt":
        try:
            with TensorFile(path) as f:
                cond = f.read("audio_prompt")
        except TensorFileError as exc:
            raise VoiceError(str(exc)) from None
    elif vf.format == "voices-bin":
        start, nbytes = vf.offsets[entry.name or ""]
        with open(path, "rb") as f:
            f.seek(start)
            cond = np.frombuffer(f.read(nbytes), "<f4").astype(np.float32)
    elif vf.format == "npy":
        cond = np.load(path, allow_pickle=False).astype(np.float32)
    else:  # pragma: no cover - every conditioning format is listed above
        raise AssertionError(vf.format)
    cond = np.ascontiguousarray(cond.reshape(entry.frames, d_model), np.float32)
    if not np.isfinite(cond).all():
        raise VoiceError(f"{path}: voice {_label(entry)} holds NaN or infinite values")
    return cond


def read_state(vf: VoiceFile, entry: VoiceEntry, on_notice: Notice | None = None) -> VoiceState:
    """The voice state of a state voice (Kyutai safetensors or a PTVB1 entry)."""
    if vf.format == "ptvb1":
        _, tensors = _read_ptvb1(vf.path, vf.path.stat().st_size, entry.name)
        ignored = [k for k in tensors if not STATE_KEY.match(k)]
        for key in ignored:
            del tensors[key]
        if ignored and on_notice is not None:
            on_notice(ignored_notice(vf.path, ignored))
        return state_from_tensors(tensors, vf.path)
    return load_voice_state(vf.path, on_notice)


def _label(entry: VoiceEntry) -> str:
    return repr(entry.name) if entry.name else "in it"


def read_conditioning_bin(path: str | Path, d_model: int) -> np.ndarray:
    """FluidAudio's ``.bin``: float32 LE ``[frames, d_model]``, 0 < frames <= 125."""
    path = Path(path)
    require_regular(path, "voice file", VoiceError)  # a FIFO or /dev/zero is never opened
    size = path.stat().st_size
    row = d_model * 4
    # No header says the width: a .bin of another model reads as the wrong frame count.
    other_width = f"; made for another model? `pockettts inspect {path}` tells its width"
    if size == 0 or size % row:
        raise VoiceError(
            f"{path}: invalid voice file size {size} bytes: a .bin voice is a"
            f" whole number of {d_model}-float frames ({row} bytes each)"
            f" for this model{other_width if size else ''}"
        )
    frames = size // row
    if frames > BIN_MAX_FRAMES:
        raise VoiceError(
            f"{path}: voice file too large: {frames} frames, at most {BIN_MAX_FRAMES},"
            f" at this model's width {d_model}{other_width}"
        )
    data = np.fromfile(path, dtype="<f4", count=frames * d_model)
    if data.size != frames * d_model:
        raise VoiceError(f"{path}: could not read {frames * d_model} floats")
    cond = data.astype(np.float32).reshape(frames, d_model)
    if not np.isfinite(cond).all():
        raise VoiceError(f"{path}: the voice holds NaN or infinite values")
    return cond


def raw_bin_widths(size: int, widths: list[int]) -> list[tuple[int, int]]:
    """(width, frames) for each width a headerless float32 file of ``size`` bytes fits."""
    return [
        (w, size // (4 * w))
        for w in widths
        if size % (4 * w) == 0 and size // (4 * w) <= BIN_MAX_FRAMES
    ]
