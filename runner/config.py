"""Typed run configuration, loaded from YAML.

A config is a plain pydantic object (nanoGPT-style: no framework to learn). Model field names follow
Levanter/Marin so configs read the same across the three projects. Unknown keys are rejected, and every
impossible value fails with a message that names the field, e.g. ``model.num_heads: 3 does not divide
hidden_dim 128``.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import typing
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from runner.errors import ConfigError
from runner.safeparse import loads_yaml


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelConfig(Strict):
    """A Llama-style decoder: RMSNorm, RoPE, SwiGLU MLP, grouped-query attention."""

    hidden_dim: int = Field(gt=0)
    intermediate_dim: int = Field(gt=0)
    num_layers: int = Field(gt=0)
    num_heads: int = Field(gt=0)
    num_kv_heads: int = Field(gt=0)
    seq_len: int = Field(gt=1)
    vocab_size: int = Field(gt=1)
    tie_embeddings: bool = True
    rope_theta: float = Field(default=10000.0, gt=0)
    norm_eps: float = Field(default=1e-5, gt=0)
    z_loss: float = Field(
        default=0.0, ge=0, description="Weight of the z-loss (log Z)^2 term; 0 disables it."
    )
    compute_dtype: Literal["bfloat16", "float32"] = "bfloat16"
    param_dtype: Literal["float32"] = "float32"
    remat: bool = Field(default=False, description="Rematerialise each block in the backward pass.")
    init_std: float = Field(default=0.02, gt=0)

    @model_validator(mode="after")
    def _heads(self) -> ModelConfig:
        if self.hidden_dim % self.num_heads:
            raise ValueError(f"num_heads: {self.num_heads} does not divide hidden_dim {self.hidden_dim}")
        if self.num_heads % self.num_kv_heads:
            raise ValueError(f"num_kv_heads: {self.num_kv_heads} does not divide num_heads {self.num_heads}")
        if (self.hidden_dim // self.num_heads) % 2:
            raise ValueError(f"num_heads: head_dim {self.hidden_dim // self.num_heads} must be even for RoPE")
        return self

    @property
    def head_dim(self) -> int:
        return self.hidden_dim // self.num_heads


class ScheduleConfig(Strict):
    """Learning-rate schedule: warmup, then cosine, WSD (warmup-stable-decay), linear or constant."""

    name: Literal["cosine", "wsd", "linear", "constant"] = "cosine"
    warmup_steps: int = Field(default=0, ge=0)
    min_lr_ratio: float = Field(default=0.1, ge=0, le=1)
    decay_fraction: float = Field(
        default=0.2, gt=0, le=1, description="WSD: fraction of steps spent decaying."
    )


class MuonConfig(Strict):
    learning_rate: float = Field(default=0.02, gt=0)
    momentum: float = Field(default=0.95, ge=0, lt=1)
    nesterov: bool = True
    ns_steps: int = Field(default=5, gt=0)


class OptimizerConfig(Strict):
    """AdamW for everything, or Muon for 2-D hidden matrices with AdamW for embeddings, head and vectors."""

    name: Literal["adamw", "muon"] = "adamw"
    learning_rate: float = Field(default=3e-3, gt=0)
    weight_decay: float = Field(default=0.1, ge=0)
    beta1: float = Field(default=0.9, ge=0, lt=1)
    beta2: float = Field(default=0.95, ge=0, lt=1)
    eps: float = Field(default=1e-8, gt=0)
    max_grad_norm: float | None = Field(default=1.0, gt=0)
    muon: MuonConfig = MuonConfig()
    ema_beta: float | None = Field(
        default=None,
        gt=0,
        lt=1,
        description="Keep an exponential moving average of the weights (Marin's ema_beta) and evaluate with it.",
    )


class TrainConfig(Strict):
    batch_size: int = Field(gt=0, description="Global batch size in sequences per optimizer step.")
    steps: int = Field(gt=0)
    seed: int = 0
    grad_accum: int = Field(default=1, gt=0)
    parallelism: Literal["data", "fsdp"] = "data"
    log_every: int = Field(default=10, gt=0)
    eval_every: int | None = Field(default=None, gt=0)
    checkpoint_every: int | None = Field(default=None, gt=0)
    keep_checkpoints: int = Field(default=2, gt=0)
    init_from: str | None = Field(
        default=None,
        description="Start from pretrained weights: a GGUF file path or 'smollm2-135m' (the shipped model); "
        "the model section must match its shape (see `openlab pretrained info`).",
    )

    @model_validator(mode="after")
    def _accum(self) -> TrainConfig:
        if self.batch_size % self.grad_accum:
            raise ValueError(f"grad_accum: {self.grad_accum} does not divide batch_size {self.batch_size}")
        return self


class HFSource(Strict):
    name: str
    revision: str = Field(description="A commit or tag: runs are pinned, never 'main'.")
    config: str | None = None
    split: str = "train"
    text_field: str = "text"
    max_documents: int | None = Field(default=None, gt=0)


class DataSource(Strict):
    """Where text comes from: the bundled corpus, local files, or a Hugging Face dataset."""

    builtin: Literal["pydoc"] | None = None
    paths: list[str] | None = None
    hf: HFSource | None = None
    text_field: str = "text"

    @model_validator(mode="after")
    def _one(self) -> DataSource:
        given = [k for k in ("builtin", "paths", "hf") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of builtin, paths, hf (got {given or 'none'})")
        return self


class MixtureComponent(Strict):
    """One source of a data mixture and its relative weight."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    source: DataSource
    weight: float = Field(gt=0, description="Relative weight; the weights are normalised to sum to 1.")


class DataConfig(Strict):
    source: DataSource = DataSource(builtin="pydoc")
    tokenizer: str = Field(
        default="byte", description="'byte', a Hugging Face tokenizers JSON file, or hf:ORG/NAME[@REVISION]."
    )
    val_fraction: float = Field(default=0.1, gt=0, lt=1)
    cache_dir: str | None = Field(default=None, description="Token cache root (local path or gs://).")
    mixture: list[MixtureComponent] | None = Field(
        default=None,
        description="Train on these weighted sources instead of `source`: every batch holds each in proportion.",
    )

    @model_validator(mode="after")
    def _mixture(self) -> DataConfig:
        if self.mixture is None:
            return self
        names = [c.name for c in self.mixture]
        if not names or len(set(names)) != len(names):
            raise ValueError(f"mixture: components need unique names (got {names})")
        if self.source != DataSource(builtin="pydoc"):
            raise ValueError("give source or mixture, not both")
        return self

    def weights(self) -> dict[str, float]:
        """Normalised mixture weights by component name (empty without a mixture)."""
        total = sum(c.weight for c in self.mixture or [])
        return {c.name: c.weight / total for c in self.mixture or []}


class EvalSet(Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    source: DataSource | None = Field(
        default=None, description="None = the held-out split of the train data."
    )
    max_tokens: int | None = Field(default=None, gt=0)


class EvalConfig(Strict):
    sets: list[EvalSet] = [EvalSet(name="val")]
    batch_size: int | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _unique(self) -> EvalConfig:
        names = [s.name for s in self.sets]
        if not names:
            raise ValueError("sets: at least one eval set is needed")
        if len(set(names)) != len(names):
            raise ValueError(f"sets: duplicate names {names}")
        return self


class TrackingConfig(Strict):
    project: str = "openlab"
    entity: str | None = None
    mode: Literal["auto", "online", "offline", "disabled"] = "auto"


class Author(Strict):
    name: str = Field(min_length=1)
    affiliation: str | None = None
    url: str | None = None


class RunConfig(Strict):
    """One training run: what `openlab train` and `openlab flops` read."""

    name: str = Field(default="run", pattern=r"^[A-Za-z0-9_.-]+$")
    track: str = "default"
    description: str = ""
    author: Author | None = None
    model: ModelConfig
    train: TrainConfig
    optimizer: OptimizerConfig = OptimizerConfig()
    schedule: ScheduleConfig = ScheduleConfig()
    data: DataConfig = DataConfig()
    eval: EvalConfig = EvalConfig()
    tracking: TrackingConfig = TrackingConfig()

    @model_validator(mode="after")
    def _cross(self) -> RunConfig:
        if self.data.mixture is not None:
            for s in self.eval.sets:
                if s.source is None:
                    raise ValueError(
                        f"eval.sets: {s.name!r} has no source, and a data mixture has no single held-out split"
                    )
        if self.schedule.warmup_steps >= self.train.steps:
            raise ValueError(
                f"schedule.warmup_steps: {self.schedule.warmup_steps} must be below train.steps {self.train.steps}"
            )
        return self

    @property
    def tokens(self) -> int:
        return self.train.batch_size * self.model.seq_len * self.train.steps

    def fingerprint(self) -> str:
        """sha256 of the canonical JSON of the config: identical configs share it, any change alters it."""
        return fingerprint(self.model_dump(mode="json"))


def fingerprint(obj: Any) -> str:
    blob = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str).encode()
    return hashlib.sha256(blob).hexdigest()


def _known_keys(model: type[BaseModel] | None, path: tuple[Any, ...]) -> list[str]:
    """The field names (and aliases) of the model reached by following ``path`` from ``model``."""
    for part in path:
        if model is None:
            return []
        if isinstance(part, int):
            continue
        field = model.model_fields.get(str(part))
        if field is None:
            return []
        model = _model_in(field.annotation)
    return [n for name, f in model.model_fields.items() for n in (name, f.alias) if n] if model else []


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):  # Optional[M], list[M], dict[str, M]
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def format_validation_error(err: ValidationError, source: str, model: type[BaseModel] | None = None) -> str:
    """One line per problem, each naming the dotted field path; an unknown key of ``model`` names the nearest
    known key ("did you mean ..."), the way a typo such as ``hiden_dim`` is usually meant."""
    lines = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"])
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            msg = "unknown key"
            near = difflib.get_close_matches(str(e["loc"][-1]), _known_keys(model, tuple(e["loc"][:-1])), n=1)
            if near:
                msg += f" (did you mean `{near[0]}`?)"
        # Model-level validators name their field as "field: problem"; fold it into the dotted path.
        head, sep, rest = msg.partition(": ")
        if sep and head.replace("_", "").replace(".", "").isalnum() and " " not in head:
            loc, msg = f"{loc}.{head}" if loc else head, rest
        lines.append(f"{source}: {loc or '(top level)'}: {msg}")
    return "; ".join(lines)


def parse_config(data: Any, source: str = "config") -> RunConfig:
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping at the top level, got {type(data).__name__}")
    try:
        return RunConfig.model_validate(data)
    except ValidationError as err:
        raise ConfigError(format_validation_error(err, source, RunConfig)) from None


def load_config(path: str | Path) -> RunConfig:
    """Read and validate a YAML config; every failure is a ConfigError naming the file and field."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{p}: no such config file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"{p}: cannot read config: {err}") from None
    # depth-bounded: a config nested thousands deep is one clear line, not a RecursionError traceback
    return parse_config(loads_yaml(text, str(p)), str(p))
