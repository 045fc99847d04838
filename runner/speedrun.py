"""``default_speedrun(name, config)``: the standard steps of a speedrun submission.

Like Marin's ``default_speedrun``, the submitter chooses the model, optimizer and schedule, and the helper fixes
what makes runs comparable: the track's data and tokenizer, the seed, and the track's eval set. It returns
``[tokenize, train, results]``:

- ``tokenized/<track data>@v1``: the track's data in the token cache, shared by every speedrun of the track;
- ``speedrun/<name>@<version>``: the trainer, reading that cache;
- ``speedrun/<name>/results@<version>``: ``results.json`` validated against :mod:`runner.schema` in its own
  folder, which the bot and the leaderboard read.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from runner.config import DataConfig, DataSource, EvalConfig, EvalSet, RunConfig
from runner.errors import ConfigError
from runner.executor import Step
from runner.steps import speedrun_results, tokenize, train

SPEEDRUN_SEED = 0


class SpeedrunTrack(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    data_name: str
    data: DataConfig
    eval: EvalConfig


TRACKS: dict[str, SpeedrunTrack] = {
    "cpu": SpeedrunTrack(
        data_name="pydoc-byte",
        data=DataConfig(source=DataSource(builtin="pydoc"), tokenizer="byte"),
        eval=EvalConfig(sets=[EvalSet(name="val")]),
    ),
}


def default_speedrun(name: str, config: RunConfig, *, version: str = "v1") -> list[Step]:
    track = TRACKS.get(config.track)
    if track is None:
        raise ConfigError(
            f"track: {config.track!r} is not a speedrun track (known: {', '.join(sorted(TRACKS))})"
        )
    tok = tokenize(f"tokenized/{track.data_name}", track.data, version="v1")
    fixed = config.model_copy(
        update={
            "name": name,
            "train": config.train.model_copy(update={"seed": SPEEDRUN_SEED}),
            "data": track.data.model_copy(update={"cache_dir": tok.output()}),
            "eval": track.eval,
        }
    )
    trained = train(f"speedrun/{name}", RunConfig.model_validate(fixed.model_dump()), version=version)
    steps = [tok, trained, speedrun_results(f"speedrun/{name}/results", trained, version=version)]
    from runner.reproduction import reproduce_if_asked  # `/verify`: N seeds of this submission (issue 14)

    return reproduce_if_asked(steps)


SUITE_SEPARATOR = "__"


def speedrun_suite(name: str, configs: list[RunConfig], *, version: str = "v1") -> list[Step]:
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
        tok, fixed = default_speedrun(f"{name}{SUITE_SEPARATOR}{label}", config, version=version)[:2]
        # `speedrun/<name>/<label>`: a nested step name gives each member its own run id and W&B run.
        trained = train(f"speedrun/{name}/{label}", fixed.config.run, version=version, resources=fixed.resources)
        steps += [tok] if not steps else []
        steps += [trained, speedrun_results(f"speedrun/{name}/{label}/results", trained, version=version)]
    return steps
