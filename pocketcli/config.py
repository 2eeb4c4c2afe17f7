"""The model configuration: Kyutai's config YAML, read without pydantic or torch.

One type describes a Pocket TTS model everywhere in pockettts (pack builder,
manifest, engine). Field names follow Kyutai's YAML so a config from
pocket-tts 4.0.1 reads as is.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pocketcli import defaults
from pocketcli.config_bounds import check_numbers
from pocketcli.errors import ConfigError as ConfigError  # defined there; re-exported

SAMPLE_RATE = defaults.SAMPLE_RATE
DEFAULT_EOS_THRESHOLD = defaults.EOS_THRESHOLD
DEFAULT_TEMPERATURE = defaults.TEMPERATURE


@dataclass(frozen=True)
class FlowTransformerConfig:
    d_model: int
    num_heads: int
    num_layers: int
    hidden_scale: int = 4
    max_period: float = 10_000.0
    attn_dim: int | None = None
    num_kv_heads: int | None = None
    dim_feedforward: int | None = None

    @property
    def query_dim(self) -> int:
        return self.attn_dim or self.d_model

    @property
    def head_dim(self) -> int:
        return self.query_dim // self.num_heads

    @property
    def kv_heads(self) -> int:
        return self.num_kv_heads or self.num_heads

    @property
    def ffn_dim(self) -> int:
        return self.dim_feedforward or int(self.d_model * self.hidden_scale)


@dataclass(frozen=True)
class FlowHeadConfig:
    dim: int
    depth: int
    type: str = "lsd"

    @property
    def num_time_conds(self) -> int:
        return {"lsd": 2, "flow_matching": 1, "drifting": 0, "pointwise": 0}[self.type]


@dataclass(frozen=True)
class LookupTableConfig:
    dim: int
    n_bins: int
    tokenizer: str
    tokenizer_path: str
    rank: int | None = None


@dataclass(frozen=True)
class FlowLMConfig:
    transformer: FlowTransformerConfig
    flow: FlowHeadConfig
    lookup_table: LookupTableConfig
    z_dim: int | None = None
    insert_bos_before_voice: bool = False
    latent_dim: int = 32
    # (layer, head) pairs whose attention over the text says which word is spoken
    # (pocket-tts-timestamped's ``timestamp_heads``); None: this model cannot time words.
    timestamp_heads: tuple[tuple[int, int], ...] | None = None

    @property
    def cond_dim(self) -> int:
        """Width of the backbone output that feeds the flow and EOS heads."""
        return self.z_dim or self.transformer.d_model


@dataclass(frozen=True)
class SEANetConfig:
    dimension: int
    channels: int
    n_filters: int
    n_residual_layers: int
    ratios: tuple[int, ...]
    kernel_size: int
    residual_kernel_size: int
    last_kernel_size: int
    dilation_base: int
    pad_mode: str
    compress: int

    @property
    def hop_length(self) -> int:
        hop = 1
        for r in self.ratios:
            hop *= r
        return hop


@dataclass(frozen=True)
class MimiTransformerConfig:
    d_model: int
    input_dimension: int
    output_dimensions: tuple[int, ...]
    num_heads: int
    num_layers: int
    layer_scale: float
    context: int
    dim_feedforward: int
    max_period: float = 10_000.0


@dataclass(frozen=True)
class MimiConfig:
    sample_rate: int
    frame_rate: float
    seanet: SEANetConfig
    transformer: MimiTransformerConfig
    quantizer_dimension: int
    quantizer_output_dimension: int
    inner_dim: int | None = None
    outer_dim: int | None = None
    decoder_seanet_config: SEANetConfig | None = None
    decoder_transformer_config: MimiTransformerConfig | None = None

    @property
    def decoder_seanet(self) -> SEANetConfig:
        return self.decoder_seanet_config or self.seanet

    @property
    def decoder_transformer(self) -> MimiTransformerConfig:
        return self.decoder_transformer_config or self.transformer

    @property
    def samples_per_frame(self) -> int:
        return int(self.sample_rate / self.frame_rate)

    @property
    def upsample_stride(self) -> int:
        """Encoder-rate steps per latent frame (16 for the released models)."""
        return self.samples_per_frame // self.seanet.hop_length


@dataclass(frozen=True)
class ModelConfig:
    flow_lm: FlowLMConfig
    mimi: MimiConfig
    text: dict[str, Any] = field(default_factory=dict)
    default_temperature: float = DEFAULT_TEMPERATURE
    default_eos_threshold: float = DEFAULT_EOS_THRESHOLD
    weights_path: str | None = None
    weights_path_without_voice_cloning: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ModelConfig:
        """The config of a dict whose every number is checked first (``config_bounds``)."""
        if not isinstance(d, dict):
            raise ConfigError(f"not a Pocket TTS config: a {type(d).__name__}, not a mapping")
        check_numbers(d)
        try:
            return _parse(d)
        except KeyError as exc:
            raise ConfigError(f"not a Pocket TTS config: no {exc} entry") from exc
        except (TypeError, ValueError, AttributeError) as exc:
            raise ConfigError(f"not a Pocket TTS config: {exc}") from exc

    @classmethod
    def from_yaml(cls, path: str | Path) -> ModelConfig:
        d = read_yaml(path)
        try:
            return cls.from_dict(d)
        except ConfigError as exc:
            raise ConfigError(f"config {path}: {exc}") from None

    def to_dict(self) -> dict[str, Any]:
        return self.raw


# A Kyutai config is a few KB; a local one past this is not one (a remote one: store.onnx).
MAX_YAML_BYTES = 1 << 20


class _NoAliasLoader(yaml.SafeLoader):
    """``safe_load`` without aliases: ``*name`` makes a node stand for another, so 1 KB of
    YAML can stand for gigabytes (an alias bomb). No Kyutai config uses one."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            raise yaml.composer.ComposerError(
                None, None, "aliases (*name) are not allowed in a model config", mark
            )
        return super().compose_node(parent, index)


def read_yaml(path: str | Path) -> dict[str, Any]:
    """A config file's mapping: at most ``MAX_YAML_BYTES``, no aliases, else one line."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_YAML_BYTES + 1)
        if len(data) > MAX_YAML_BYTES:
            raise ConfigError(
                f"cannot read config {path}: it is larger than {MAX_YAML_BYTES >> 10} KB,"
                " not a model config"
            )
        d = yaml.load(data.decode("utf-8"), Loader=_NoAliasLoader)  # noqa: S506 - safe, no aliases
    except (OSError, yaml.YAMLError, UnicodeDecodeError) as exc:
        cause = (str(exc).splitlines() or [type(exc).__name__])[0]
        if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
            cause = f"{exc.problem} (line {exc.problem_mark.line + 1})"
        raise ConfigError(f"cannot read config {path}: {cause}") from None
    except RecursionError:
        raise ConfigError(f"cannot read config {path}: it is nested too deeply") from None
    if not isinstance(d, dict):
        raise ConfigError(f"{path} is not a YAML mapping")
    return d


_TEXT_KEYS = (
    "pad_with_spaces_for_short_inputs",
    "remove_semicolons",
    "append_terminal_punctuation",
    "capitalize_first_letter",
    "replace_characters",
    "model_recommended_frames_after_eos",
)


def _pick(cls, d: dict[str, Any]):
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in d.items() if k in names}


def _seanet(d: dict[str, Any]) -> SEANetConfig:
    d = dict(d)
    d["ratios"] = tuple(d["ratios"])
    return SEANetConfig(**_pick(SEANetConfig, d))


def _mimi_transformer(d: dict[str, Any]) -> MimiTransformerConfig:
    d = dict(d)
    d["output_dimensions"] = tuple(d["output_dimensions"])
    return MimiTransformerConfig(**_pick(MimiTransformerConfig, d))


def _parse(d: dict[str, Any]) -> ModelConfig:
    fl = d["flow_lm"]
    flow_lm = FlowLMConfig(
        transformer=FlowTransformerConfig(**_pick(FlowTransformerConfig, fl["transformer"])),
        flow=FlowHeadConfig(**_pick(FlowHeadConfig, fl["flow"])),
        lookup_table=LookupTableConfig(**_pick(LookupTableConfig, fl["lookup_table"])),
        z_dim=fl.get("z_dim"),
        insert_bos_before_voice=bool(fl.get("insert_bos_before_voice", False)),
        latent_dim=int(d["mimi"]["quantizer"]["dimension"]),
    )
    flow_lm = dataclasses.replace(flow_lm, timestamp_heads=_timestamp_heads(d, flow_lm.transformer))
    if flow_lm.flow.type not in ("lsd", "flow_matching", "drifting", "pointwise"):
        raise ValueError(f"unknown flow head type {flow_lm.flow.type!r}")
    m = d["mimi"]
    mimi = MimiConfig(
        sample_rate=int(m["sample_rate"]),
        frame_rate=float(m["frame_rate"]),
        seanet=_seanet(m["seanet"]),
        transformer=_mimi_transformer(m["transformer"]),
        quantizer_dimension=int(m["quantizer"]["dimension"]),
        quantizer_output_dimension=int(m["quantizer"]["output_dimension"]),
        inner_dim=m.get("inner_dim"),
        outer_dim=m.get("outer_dim"),
        decoder_seanet_config=_seanet(m["decoder_seanet"]) if m.get("decoder_seanet") else None,
        decoder_transformer_config=(
            _mimi_transformer(m["decoder_transformer"]) if m.get("decoder_transformer") else None
        ),
    )
    return ModelConfig(
        flow_lm=flow_lm,
        mimi=mimi,
        text={k: d[k] for k in _TEXT_KEYS if k in d},
        default_temperature=float(d.get("default_temperature", DEFAULT_TEMPERATURE)),
        default_eos_threshold=float(d.get("default_eos_threshold", DEFAULT_EOS_THRESHOLD)),
        weights_path=d.get("weights_path"),
        weights_path_without_voice_cloning=d.get("weights_path_without_voice_cloning"),
        raw=d,
    )


def published_timestamp_heads() -> dict[str, list[list[int]]]:
    """The fork's head lists by the weights file they were chosen for
    (``data/timestamp_heads.json``)."""
    path = Path(__file__).parent / "data" / "timestamp_heads.json"
    return json.loads(path.read_text(encoding="utf-8"))["models"]


def _timestamp_heads(
    d: dict[str, Any], t: FlowTransformerConfig
) -> tuple[tuple[int, int], ...] | None:
    """The config's ``timestamp_heads`` (a list of ``{layer, head}``), else the published
    list for its weights, else None; each pair within the FlowLM, none twice."""
    given = d.get("timestamp_heads")
    if given is None:
        published = published_timestamp_heads().get(str(d.get("weights_path")))
        return None if published is None else tuple((a, b) for a, b in published)
    if not isinstance(given, list) or not given:
        raise ValueError("timestamp_heads must be a list of at least one {layer, head} pair")
    pairs: list[tuple[int, int]] = []
    for item in given:
        if not isinstance(item, dict) or set(item) != {"layer", "head"}:
            raise ValueError(f"timestamp_heads entry {item!r} is not a {{layer, head}} pair")
        layer, head = item["layer"], item["head"]
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (layer, head)):
            raise ValueError(f"timestamp_heads entry {item!r}: layer and head must be whole")
        if not (0 <= layer < t.num_layers and 0 <= head < t.num_heads):
            raise ValueError(
                f"timestamp_heads entry {item!r} is outside the FlowLM's"
                f" {t.num_layers} layers of {t.num_heads} heads"
            )
        if (layer, head) in pairs:
            raise ValueError(f"timestamp_heads lists layer {layer} head {head} twice")
        pairs.append((layer, head))
    return tuple(pairs)
