"""``default_speedrun(name, config, resources=...)``: the standard steps of a speedrun submission.

Like Marin's ``default_speedrun``, the submitter chooses the model, optimizer and schedule, and the helper fixes
what makes runs comparable: the track's data and tokenizer, the seed, and the track's eval sets. It returns
``[tokenize, train, results]``:

- ``tokenized/<track data_name, default its id>@v1``: the track's data in the token cache, shared by every speedrun of the track;
- ``speedrun/<name>@<version>``: the trainer, reading that cache, on the ``resources`` asked for;
- ``speedrun/<name>/results@<version>``: ``results.json`` validated against :mod:`runner.schema` in its own
  folder, which the bot and the leaderboard read.

Tracks are data, not code (:class:`SpeedrunTrack`): ``runner/speedrun_tracks.yml`` ships ``cpu`` and Marin's
``fineweb_edu``; a lab adds or replaces tracks in ``.github/speedrun_tracks.yml`` of its repository (looked for
in the working directory, where ``openlab plan|run`` are run), or a file passed as ``tracks_file``.
A track whose data cannot be reached here still plans; its tokenize step then fails naming the source.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources as pkg_resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from runner.config import (
    DataConfig,
    DataSource,
    EvalConfig,
    MixtureComponent,
    RunConfig,
    format_validation_error,
)
from runner.errors import ConfigError
from runner.executor import Resources, Step
from runner.steps import speedrun_results, tokenize, train

TRACKS_FILE = "speedrun_tracks.yml"
REPO_TRACKS = Path(".github") / TRACKS_FILE
_TPU = re.compile(r"^(?P<gen>v\d+[a-z]*|v5litepod)-(?P<n>\d+)$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SpeedrunTrack(_Strict):
    """What every speedrun on a track shares."""

    description: str = ""
    data_name: str | None = Field(
        default=None, pattern=r"^[A-Za-z0-9_.-]+$", description="Token-cache step name (default: the track id)."
    )
    source: DataSource | None = None
    mixture: list[MixtureComponent] | None = None
    tokenizer: str = Field(default="byte", description="'byte', a tokenizers JSON file, or hf:NAME[@REVISION].")
    eval: EvalConfig = EvalConfig()
    seed: int = 0
    vocab_size: int | None = Field(default=None, gt=1, description="Fixes the model's vocab (and its FLOPs).")
    budgets: list[float] = Field(default=[], description="FLOPs budget bands, ascending.")

    @model_validator(mode="after")
    def _data(self) -> SpeedrunTrack:
        if (self.source is None) == (self.mixture is None):
            raise ValueError("give exactly one of source, mixture")
        if self.mixture is not None:
            names = [c.name for c in self.mixture]
            if not names or len(set(names)) != len(names):
                raise ValueError(f"mixture: components need unique names (got {names})")
            if any(s.source is None for s in self.eval.sets):
                raise ValueError("eval.sets: a mixture track's eval sets each need a source")
        for where, src in self._sources():
            if src.hf is not None and src.hf.revision.lower() in ("main", "master", "head"):
                raise ValueError(f"{where}.hf.revision: pin a commit or tag, not {src.hf.revision!r}")
        if self.budgets != sorted(self.budgets) or any(b <= 0 for b in self.budgets):
            raise ValueError("budgets: positive FLOPs, ascending")
        return self

    def _sources(self) -> list[tuple[str, DataSource]]:
        if self.source is not None:
            return [("source", self.source)]
        return [(f"mixture[{c.name}].source", c.source) for c in self.mixture or []]

    def weights(self) -> dict[str, float]:
        """Normalised mixture weights (a single source is the mixture ``{"data": 1.0}``)."""
        return self.data().weights() if self.mixture is not None else {"data": 1.0}

    def data(self) -> DataConfig:
        if self.source is None:
            return DataConfig(mixture=self.mixture, tokenizer=self.tokenizer)
        return DataConfig(source=self.source, tokenizer=self.tokenizer)

    def budget_band(self, flops: float) -> float | None:
        """The smallest budget that holds ``flops`` (None when above every band or the track has none)."""
        return next((b for b in self.budgets if flops <= b), None)


class SpeedrunTracks(_Strict):
    tracks: dict[str, SpeedrunTrack]


class SpeedrunResources(_Strict):
    """The accelerators a speedrun's train step asks for: Marin's ``ResourceConfig.with_gpu / with_tpu``.

    GPUs: ``gpu_count`` of ``accelerator_type`` (Ray's ``accelerator_type:<TYPE>`` node label). TPUs:
    ``slice_count`` slices of ``tpu_type`` (``v4-128``...); the step is placed on worker 0 of a slice (Ray's
    ``TPU-<type>-head`` resource) with that host's 4 chips.
    """

    cpus: float = Field(default=1.0, ge=0)
    gpu_count: int = Field(default=0, ge=0)
    accelerator_type: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_.-]+$")
    tpu_type: str | None = Field(default=None, pattern=r"^(v\d+[a-z]*|v5litepod)-\d+$")
    slice_count: int = Field(default=1, gt=0)
    memory_gb: float | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _one_kind(self) -> SpeedrunResources:
        if self.tpu_type and (self.gpu_count or self.accelerator_type):
            raise ValueError("ask for GPUs or a TPU type, not both")
        if self.accelerator_type and not self.gpu_count:
            raise ValueError("accelerator_type: needs gpu_count")
        return self

    @classmethod
    def with_gpu(cls, accelerator_type: str | None = None, count: int = 1, cpus: float = 1.0) -> SpeedrunResources:
        return cls(gpu_count=count, accelerator_type=accelerator_type, cpus=cpus)

    @classmethod
    def with_tpu(cls, tpu_type: str, slice_count: int = 1, cpus: float = 1.0) -> SpeedrunResources:
        return cls(tpu_type=tpu_type, slice_count=slice_count, cpus=cpus)

    def chips(self) -> int:
        """Accelerator chips in all: v2-v4 and v5p names count TensorCores (two per chip), v5e/v6e chips."""
        if self.tpu_type:
            m = _TPU.match(self.tpu_type)
            assert m is not None  # the field's pattern
            n = int(m.group("n"))
            per_slice = n if m.group("gen") in ("v5litepod", "v5e", "v6e") else max(1, n // 2)
            return per_slice * self.slice_count
        return self.gpu_count

    def to_resources(self) -> Resources:
        if self.tpu_type:
            head = Resources.tpu(self.tpu_type, chips=min(4, self.chips()), cpus=self.cpus)
            custom = {**head.custom, f"TPU-{self.tpu_type}-head": float(self.slice_count)}
            return Resources(cpus=self.cpus, memory_gb=self.memory_gb, custom=custom)
        custom = {f"accelerator_type:{self.accelerator_type}": 0.001} if self.accelerator_type else {}
        return Resources(cpus=self.cpus, gpus=float(self.gpu_count), memory_gb=self.memory_gb, custom=custom)


def parse_speedrun_tracks(data: Any, source: str) -> dict[str, SpeedrunTrack]:
    if not isinstance(data, dict) or not isinstance(data.get("tracks"), dict):
        raise ConfigError(f"{source}: expected a mapping with 'tracks:' (track id -> track)")
    for tid in data["tracks"]:
        if not isinstance(tid, str) or not re.fullmatch(r"[a-z0-9][a-z0-9_-]{0,47}", tid):
            raise ConfigError(f"{source}: tracks: {tid!r} is not a track id (lowercase letters, digits, _ or -)")
    try:
        return SpeedrunTracks.model_validate(data).tracks
    except ValidationError as err:
        raise ConfigError(format_validation_error(err, source)) from None


def _read_yaml(text: str, source: str) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        raise ConfigError(f"{source}{f' line {mark.line + 1}' if mark else ''}: not valid YAML") from None


@cache
def builtin_tracks() -> dict[str, SpeedrunTrack]:
    text = pkg_resources.files("runner").joinpath(TRACKS_FILE).read_text(encoding="utf-8")
    return parse_speedrun_tracks(_read_yaml(text, f"runner/{TRACKS_FILE}"), f"runner/{TRACKS_FILE}")


def load_speedrun_tracks(path: str | Path | None = None) -> dict[str, SpeedrunTrack]:
    """The shipped tracks, with those of ``path`` (default: the repository's ``.github/speedrun_tracks.yml``)
    added or replacing them by id."""
    tracks = dict(builtin_tracks())
    p = Path(path) if path else REPO_TRACKS
    if p.is_file():
        try:
            text = p.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise ConfigError(f"{p}: cannot read: {err}") from None
        tracks.update(parse_speedrun_tracks(_read_yaml(text, str(p)), str(p)))
    elif path:
        raise ConfigError(f"{p}: no such tracks file")
    return tracks


def default_speedrun(
    name: str,
    config: RunConfig,
    *,
    version: str = "v1",
    resources: SpeedrunResources | None = None,
    tracks: dict[str, SpeedrunTrack] | None = None,
) -> list[Step]:
    tracks = tracks if tracks is not None else load_speedrun_tracks()
    track = tracks.get(config.track)
    if track is None:
        raise ConfigError(
            f"track: {config.track!r} is not a speedrun track (known: {', '.join(sorted(tracks))}; "
            f"add tracks in {REPO_TRACKS})"
        )
    data = track.data()
    tok = tokenize(f"tokenized/{track.data_name or config.track}", data, version="v1")
    model = config.model if track.vocab_size is None else config.model.model_copy(
        update={"vocab_size": track.vocab_size}
    )
    fixed = config.model_copy(
        update={
            "name": name,
            "model": model,
            "train": config.train.model_copy(update={"seed": track.seed}),
            "data": data.model_copy(update={"cache_dir": tok.output()}),
            "eval": track.eval,
        }
    )
    run = RunConfig.model_validate(fixed.model_dump())
    needs = (resources or SpeedrunResources()).to_resources()
    trained = train(f"speedrun/{name}", run, version=version, resources=needs)
    steps = [tok, trained, speedrun_results(f"speedrun/{name}/results", trained, version=version)]
    from runner.reproduction import reproduce_if_asked  # `/verify`: N seeds of this submission (issue 14)

    return reproduce_if_asked(steps)


SUITE_SEPARATOR = "__"


def speedrun_suite(name: str, configs: list[RunConfig], *, version: str = "v1",
                   resources: SpeedrunResources | None = None) -> list[Step]:
    """One method at several budgets: a scaling suite, one experiment with one plan (every member and the total
    FLOPs). Member ``i`` is the step ``speedrun/<name>/<label>`` (label: the config's name, else ``m<i>``) training
the run ``<name>__<label>`` on the track's shared tokenize step, like ``default_speedrun``; the site fits
    BPB against FLOPs over the members of ``<name>`` (:mod:`leaderboard.suites`)."""
    if len(configs) < 2:
        raise ConfigError(f"speedrun_suite {name!r}: needs at least 2 configs (got {len(configs)})")
    if SUITE_SEPARATOR in name:
        raise ConfigError(f"speedrun_suite {name!r}: the name may not contain {SUITE_SEPARATOR!r}")
    steps: list[Step] = []
    labels: set[str] = set()
    for i, config in enumerate(configs):
        label = config.name if config.name not in ("run", name) else f"m{i}"
        if label in labels:
            raise ConfigError(f"speedrun_suite {name!r}: config {i}: duplicate member name {label!r}")
        labels.add(label)
        tok, fixed = default_speedrun(f"{name}{SUITE_SEPARATOR}{label}", config, version=version,
                                     resources=resources)[:2]
        # `speedrun/<name>/<label>`: a nested step name gives each member its own run id and W&B run.
        trained = train(f"speedrun/{name}/{label}", fixed.config.run, version=version, resources=fixed.resources)
        steps += [tok] if not steps else []
        steps += [trained, speedrun_results(f"speedrun/{name}/{label}/results", trained, version=version)]
    return steps
