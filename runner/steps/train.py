"""Train: the trainer (``runner.train.train``) writing results.json, metrics and checkpoints in the step folder.

The step folder is the trainer's ``--out``: a train step killed and taken over resumes from its last checkpoint.

``OPENLAB_MAX_TRAIN_STEPS=N`` caps every train step built while it is set (smoke tests of whole experiments).
The cap is applied to the config, so it shows in the plan and the fingerprint: a capped run can never pass for
a real one, and reusing a prefix across the two reports the drift.
"""

from __future__ import annotations

import os
import re

from pydantic import BaseModel, ConfigDict

from runner.config import RunConfig
from runner.executor import Resources, Step, StepContext


class TrainStepConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    run: RunConfig


def train_run_id(ctx: StepContext) -> str:
    """A speedrun's one train step (``speedrun/<name>``) runs under the launch's run id, the id the bot announced
    with its W&B link; any other train step gets the launch id plus its own name, so two trainings of one
    experiment never share a W&B run."""
    if ctx.name.startswith("speedrun/") and ctx.name.count("/") == 1:
        return ctx.run_id
    return f"{ctx.run_id}-{re.sub(r'[^a-z0-9]+', '-', ctx.name.lower()).strip('-')}"[:120]


def run_train(cfg: TrainStepConfig, ctx: StepContext) -> dict:
    from runner.train import train as train_model

    results = train_model(cfg.run, ctx.output_path, run_id=train_run_id(ctx), progress=False)
    return {
        "bpb": results.bpb,
        "model_flops": results.model_flops,
        "tokens": results.tokens,
        "run_id": results.run_id,
        "tracking": results.tracking.model_dump(mode="json"),
    }


def cap_steps(run: RunConfig, max_steps: int) -> RunConfig:
    if run.train.steps <= max_steps:
        return run
    data = run.model_dump()
    data["train"]["steps"] = max_steps
    data["schedule"]["warmup_steps"] = min(run.schedule.warmup_steps, max_steps - 1)
    return RunConfig.model_validate(data)


def train(name: str, run: RunConfig, *, version: str = "v1", resources: Resources | None = None) -> Step:
    """A training step; its model FLOPs and tokens appear in `openlab plan`."""
    cap = os.environ.get("OPENLAB_MAX_TRAIN_STEPS")
    if cap:
        run = cap_steps(run, int(cap))
    return Step(
        name,
        run_train,
        TrainStepConfig(run=run),
        version=version,
        kind="train",
        resources=resources or Resources(),
    )
