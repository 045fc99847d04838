"""Speedrun results: the train step's results.json, validated against the results schema and published in
this step's folder (where the bot and the leaderboard look for it)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from runner import store
from runner.executor import Step, StepContext


class ResultsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    train_dir: str
    track: str


def run_results(cfg: ResultsConfig, ctx: StepContext) -> dict:
    from runner.schema import ResultsError, dumps_results, loads_results

    src = store.join(cfg.train_dir, "results.json")
    try:
        results = loads_results(store.read_bytes(src), src)
    except FileNotFoundError:
        raise ResultsError(f"{src}: the train step wrote no results.json") from None
    if results.track != cfg.track:
        raise ResultsError(f"{src}: track is {results.track!r}, this speedrun is on {cfg.track!r}")
    store.atomic_write_text(store.join(ctx.output_path, "results.json"), dumps_results(results))
    return {
        k: getattr(results, k) for k in ("run_id", "name", "track", "bpb", "model_flops", "tokens", "params")
    }


def speedrun_results(name: str, trained: Step, *, version: str = "v1") -> Step:
    track = trained.config.run.track
    return Step(
        name,
        run_results,
        ResultsConfig(train_dir=trained.output(), track=track),
        version=version,
        kind="results",
    )
