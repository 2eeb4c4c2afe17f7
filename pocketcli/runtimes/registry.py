"""The runtime registry: every backend pockettts can speak with, in one place.

A backend is a ``RuntimeSpec``: its name, precisions (and the default), the
languages it has packs for, whether it can run here (and why not), how to find
or fetch a pack, how to load it into a ``Runtime`` (``runtimes.base``), and
where its built-in voices live. The library (``PocketTTS.open``), the CLI's
flags, their help, completion and validation all read the registry, so a new
backend is one module and one registration:

- built in: add its spec to ``BUILTIN`` below;
- as a plug-in package: declare an entry point in the group
  ``pockettts.runtimes`` naming a ``RuntimeSpec`` instance (or a callable
  returning one)::

      [project.entry-points."pockettts.runtimes"]
      mybackend = "my_package.spec:SPEC"

- at run time: ``register(spec)``.

Nothing outside ``runtimes/`` and ``store/`` compares runtime names; callers
ask the spec.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

from pocketcli.errors import (
    FieldError,
    OptionConflict,
    RuntimeUnavailable,
    UnknownNameError,
    UserError,
)
from pocketcli.options import AUTO_RUNTIME, DEFAULT_LANGUAGE, ModelRequest

if TYPE_CHECKING:
    from pocketcli.runtimes.base import Runtime

ENTRY_POINT_GROUP = "pockettts.runtimes"
AUTO = AUTO_RUNTIME
# name -> "module:attribute" of the spec; imported on first use (cheap --help).
BUILTIN = MappingProxyType(
    {
        "onnx": "pocketcli.runtimes.onnx_spec:SPEC",
        "coreml": "pocketcli.runtimes.coreml_spec:SPEC",
        "kevinahm": "pocketcli.runtimes.kevinahm_spec:SPEC",
        "browser": "pocketcli.runtimes.web_spec:SPEC",
    }
)

log = logging.getLogger(__name__)


def check(request: ModelRequest, need_here: bool = True) -> ModelRequest:
    """``request`` with the runtime chosen, names lower-cased and checked,
    defaults filled in. Raises ``UnknownNameError``, ``OptionConflict`` or
    (with ``need_here``: the model will run on this machine, not only be
    downloaded) ``RuntimeUnavailable``, before anything is downloaded or loaded.
    The errors name ``ModelRequest``'s fields."""
    req = request.normalized()
    spec = _claiming(req.model_dir, req.runtime) or choose(req.runtime)
    _check_known(req.placement, "placement", all_placements())
    _check_known(req.compute_units, "compute_units", all_compute_units())
    checked = spec.check(replace(req, runtime=spec.name))
    reason = spec.unavailable_reason() if need_here else None
    if reason is not None:
        raise RuntimeUnavailable(reason)
    return checked


def spec_for(request: ModelRequest) -> RuntimeSpec:
    """The runtime a (checked) request names."""
    return get(request.runtime)


def ignored_fields(request: ModelRequest) -> list[str]:
    """The fields of a checked request its runtime has no use for."""
    spec = spec_for(request)
    ignored = []
    if request.placement is not None and not spec.placements:
        ignored.append("placement")
    if request.compute_units is not None and not spec.compute_units:
        ignored.append("compute_units")
    return ignored


@dataclass(frozen=True)
class LoadedModel:
    """What a spec hands ``PocketTTS``: the runtime and what the pack says of itself."""

    runtime: Runtime
    tokenizer_path: Path
    tokenizer_kind: str
    language: str | None  # None: the pack does not say (a custom config)
    pack_dir: Path


class RuntimeSpec:
    """One backend. Subclass it and override what differs from these defaults."""

    name: str = ""
    description: str = ""
    precisions: tuple[str, ...] = ()
    default_precision: str = ""
    placements: tuple[str, ...] = ()  # empty: the runtime has no placements
    default_placement: str | None = None
    compute_units: tuple[str, ...] = ()  # empty: no compute-unit presets
    compute_unit_aliases: Mapping[str, str] = MappingProxyType({})
    default_compute_units: str | None = None
    local_packs: bool = True  # takes --model-dir
    custom_configs: bool = False  # takes --config (builds a pack from any Kyutai config)
    builds_packs: bool = False  # builds its packs here (so --rebuild means something)
    auto_rank: int = 0  # "auto" picks the available runtime with the highest rank
    claims_for: tuple[str, ...] = ()  # --runtime names (besides auto) whose folders it may take

    def claims_folder(self, directory: Path) -> bool:
        """True when a ``--model-dir`` folder is in this runtime's layout (e.g. another
        project's bundle): the folder then goes to it, whatever ``auto`` would pick."""
        return False

    # -- what can run here ---------------------------------------------------
    def unavailable_reason(self) -> str | None:
        """None when the runtime can run on this system; else one line saying why not."""
        return None

    def languages(self) -> tuple[str, ...]:
        """Language ids this runtime can fetch a pack for."""
        return ()

    def voices(self, language: str) -> tuple[str, ...]:
        """Built-in voice names for a language (from the catalogue)."""
        from pocketcli.store.catalog import known_voices

        return known_voices(language)

    # -- checking a request (no download, no load) --------------------------
    def check(self, req: ModelRequest) -> ModelRequest:
        """Validates ``req`` (names already lower case) and fills in defaults."""
        if req.config is not None and not self.custom_configs:
            raise OptionConflict(
                "{config} builds packs for other runtimes; the "
                + self.name
                + " runtime takes its packs by {language}",
                "config",
                "runtime",
                "language",
            )
        if req.model_dir is not None and not self.local_packs:
            raise OptionConflict(
                "the " + self.name + " runtime takes its packs by {language}, not {model_dir}",
                "model_dir",
                "runtime",
                "language",
            )
        if req.model_dir is not None and req.language is not None:
            self.check_pack_language(req.model_dir, req.language)
        precision = req.precision or self.default_precision
        if precision not in self.precisions:
            raise UnknownNameError(
                "precision", precision, self.precisions, f"for the {self.name} runtime"
            )
        if (
            req.language is not None
            and req.model_dir is None
            and req.language not in self.languages()
        ):
            raise UnknownNameError(
                "language", req.language, self.languages(), self.language_hint(req.language)
            )
        placement = req.placement
        if self.placements:
            placement = placement or self.default_placement
            if placement not in self.placements:
                raise UnknownNameError("placement", str(placement), self.placements)
        units = req.compute_units
        if self.compute_units:
            units = self.compute_unit_aliases.get(units or "", units) or self.default_compute_units
            if units not in self.compute_units:
                raise UnknownNameError(
                    "compute_units",
                    str(req.compute_units),
                    self.compute_units + tuple(self.compute_unit_aliases),
                )
        return replace(req, precision=precision, placement=placement, compute_units=units)

    def check_pack_language(self, pack_dir: Path, language: str) -> None:
        """A language named beside a local pack must be the pack's own (scripts
        pass --language english with a pack); anything else is a conflict."""
        try:
            pack = self.pack_language(pack_dir)
        except UserError:  # no pack there: the conflict is what to say first
            pack = None
        if pack is not None and pack == language:
            return
        said = f" ({pack_dir} holds a {pack} model)" if pack is not None else ""
        raise OptionConflict(
            "{model_dir} already names the model" + said + ": drop {language}",
            "model_dir",
            "language",
        )

    def language_hint(self, language: str) -> str:
        """Said after "unknown language": e.g. which other runtime has it."""
        return ""

    def check_voice(self, req: ModelRequest, name: str) -> None:
        """Fails (``UnknownNameError`` / ``UserError``) when ``name`` cannot be a
        built-in voice of the model ``req`` names; no download."""
        from pocketcli.store.catalog import check_voice

        check_voice(name, req.model_language)

    # -- finding and loading --------------------------------------------------
    def find_pack(self, req: ModelRequest) -> Path:
        """The pack folder for ``req``: ``model_dir`` as given, else fetched or built."""
        if req.model_dir is None:
            raise OptionConflict(
                "the " + self.name + " runtime needs {model_dir}", "model_dir", "runtime"
            )
        return req.model_dir

    def load(self, pack_dir: Path, req: ModelRequest) -> LoadedModel:
        raise NotImplementedError

    # -- voices ----------------------------------------------------------------
    def default_voice(self, model: LoadedModel, req: ModelRequest) -> str | None:
        """The voice to speak with when none is named (None: no voice prompt)."""
        from pocketcli.store.catalog import default_voice_for

        return default_voice_for(model.language or req.model_language)

    def voice_file(self, model: LoadedModel, req: ModelRequest, name: str) -> Path:
        """The file of a built-in voice (fetched if needed)."""
        raise FieldError(
            f"the {self.name} runtime has no built-in voices; use a voice file", "voice"
        )

    def pack_voices(self, pack_dir: Path) -> tuple[str, ...]:
        """Voice names a local pack carries (``voices/`` and ``constants_bin/``)."""
        names = {
            p.stem
            for folder in ("voices", "constants_bin")
            for p in (Path(pack_dir) / folder).glob("*.safetensors")
        }
        return tuple(sorted(names))

    def pack_language(self, pack_dir: Path) -> str | None:
        """The language a local pack was made for, when it says so (its built-in
        voices are then that language's); None when it does not."""
        return None

    def fetch_voices(self, req: ModelRequest, names: tuple[str | None, ...]) -> None:
        """Fetches built-in voices that do not come with the pack (``None``: the
        language's default ones); a no-op where the pack carries its voices."""

    def prepare_cloning(self, model: LoadedModel, req: ModelRequest) -> None:
        """Fetches what cloning needs beyond the pack (e.g. an encoder), if anything."""


_registered: dict[str, RuntimeSpec] = {}
_plugins_loaded = False


def register(spec: RuntimeSpec) -> RuntimeSpec:
    """Adds (or replaces) a runtime; returns it, so it can decorate an instance."""
    if not spec.name or spec.name != spec.name.lower() or spec.name == AUTO:
        raise ValueError(f"a runtime needs a lower-case name other than 'auto': {spec.name!r}")
    _registered[spec.name] = spec
    return spec


def _load_target(target: str) -> RuntimeSpec:
    module, _, attr = target.partition(":")
    obj = getattr(importlib.import_module(module), attr)
    return obj() if callable(obj) and not isinstance(obj, RuntimeSpec) else obj


def _ensure_loaded() -> None:
    global _plugins_loaded
    for name, target in BUILTIN.items():
        if name not in _registered:
            register(_load_target(target))
    if _plugins_loaded:
        return
    _plugins_loaded = True
    from importlib.metadata import entry_points

    for entry in entry_points(group=ENTRY_POINT_GROUP):
        try:
            spec = entry.load()
            spec = spec() if callable(spec) and not isinstance(spec, RuntimeSpec) else spec
        except Exception as exc:  # a broken plug-in must not break the built-in runtimes
            log.warning("runtime plug-in %s failed to load: %s", entry.value, exc)
            continue
        if isinstance(spec, RuntimeSpec) and spec.name not in BUILTIN:
            register(spec)


def names() -> tuple[str, ...]:
    """Every registered runtime (built-ins first, then plug-ins)."""
    _ensure_loaded()
    return tuple(_registered)


def builtin_names() -> tuple[str, ...]:
    """The runtimes that ship with pockettts (no import needed)."""
    return tuple(BUILTIN)


def get(name: str) -> RuntimeSpec:
    _ensure_loaded()
    spec = _registered.get(name.lower())
    if spec is None:
        raise UnknownNameError("runtime", name, (AUTO, *_registered))
    return spec


def choose(requested: str) -> RuntimeSpec:
    """A named runtime, or for ``auto`` the highest-ranked one that runs here."""
    if requested.lower() != AUTO:
        return get(requested)
    _ensure_loaded()
    ranked = sorted(_registered.values(), key=lambda s: -s.auto_rank)
    for spec in ranked:
        if spec.auto_rank > 0 and spec.unavailable_reason() is None:
            return spec
    return get("onnx")


def _claiming(model_dir: Path | None, requested: str) -> RuntimeSpec | None:
    """The runtime that claims a ``--model-dir`` folder asked for with ``requested``."""
    if model_dir is None:
        return None
    _ensure_loaded()
    for spec in _registered.values():
        wanted = requested in (AUTO, spec.name, *spec.claims_for)
        if wanted and spec.claims_folder(model_dir):
            return spec
    return None


def all_languages() -> tuple[str, ...]:
    """Every language some runtime has, sorted (for completion)."""
    return tuple(sorted({lang for name in names() for lang in get(name).languages()}))


def all_precisions() -> tuple[str, ...]:
    return tuple(dict.fromkeys(p for name in names() for p in get(name).precisions))


def all_placements() -> tuple[str, ...]:
    return tuple(dict.fromkeys(p for name in names() for p in get(name).placements))


def all_compute_units() -> tuple[str, ...]:
    out: list[str] = []
    for name in names():
        spec = get(name)
        out += [*spec.compute_units, *spec.compute_unit_aliases]
    return tuple(dict.fromkeys(out))


def request_fields() -> tuple[str, ...]:
    return tuple(f.name for f in fields(ModelRequest))


def _check_known(value: str | None, field: str, valid: tuple[str, ...]) -> None:
    """A value some runtime takes (a typo is an error even where it would be ignored)."""
    if value is not None and value not in valid:
        raise UnknownNameError(field, value, valid)


__all__ = [
    "AUTO",
    "DEFAULT_LANGUAGE",
    "ENTRY_POINT_GROUP",
    "LoadedModel",
    "ModelRequest",
    "OptionConflict",
    "RuntimeSpec",
    "RuntimeUnavailable",
    "UnknownNameError",
    "check",
    "choose",
    "get",
    "names",
    "register",
]
