"""Eval BPB: the latest checkpoint of a train step, scored on eval sets of its own choosing.

Writes ``eval.json`` (``{set: EvalSetResult}``, the results schema's own model), so two runs trained on
different data can be compared on one held-out set.
"""

from __future__ import annotations

import json

import numpy as np
from pydantic import BaseModel, ConfigDict

from runner import store
from runner.config import EvalSet, RunConfig
from runner.executor import Step, StepContext


class EvalBpbConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    train_dir: str
    run: RunConfig
    sets: list[EvalSet]
    batch_size: int = 8


def load_params(train_dir: str, run: RunConfig):  # type: ignore[no-untyped-def]
    """The params of the newest checkpoint in ``{train_dir}/checkpoints`` (restored on the host)."""
    from runner.checkpoint import Checkpointer
    from runner.errors import CheckpointError
    from runner.optim import make_optimizer
    from runner.parallel import make_mesh
    from runner.trainstep import abstract_state

    tx, _ = make_optimizer(run.optimizer, run.schedule, run.train.steps)
    abstract, _ = abstract_state(run, tx, make_mesh())
    restored = Checkpointer(store.join(train_dir, "checkpoints"), run.train.keep_checkpoints).restore_latest(
        abstract, run
    )
    if restored is None:
        raise CheckpointError(f"{train_dir}: no checkpoint to evaluate")
    return restored.state["params"]


def run_eval_bpb(cfg: EvalBpbConfig, ctx: StepContext) -> dict:
    from runner.data import load_tokenizer
    from runner.eval import evaluate, load_eval_sets

    tok = load_tokenizer(cfg.run.data.tokenizer)
    params = load_params(cfg.train_dir, cfg.run)
    token_bytes = np.zeros(cfg.run.model.vocab_size, dtype=np.int64)
    token_bytes[: tok.vocab_size] = tok.token_bytes()
    run = cfg.run.model_copy(update={"eval": cfg.run.eval.model_copy(update={"sets": cfg.sets})})
    data = load_eval_sets(run, tok)
    limits = {s.name: s.max_tokens for s in cfg.sets}
    out = {
        name: evaluate(params, run.model, d, token_bytes, batch_size=cfg.batch_size, max_tokens=limits[name])
        for name, d in data.items()
    }
    payload = {k: v.model_dump(mode="json") for k, v in out.items()}
    store.atomic_write_text(store.join(ctx.output_path, "eval.json"), json.dumps(payload, indent=2) + "\n")
    return {k: v.bpb for k, v in out.items()}


def eval_bpb(name: str, trained: Step, sets: list[EvalSet], *, version: str = "v1") -> Step:
    run = trained.config.run
    return Step(
        name,
        run_eval_bpb,
        EvalBpbConfig(train_dir=trained.output(), run=run, sets=sets),
        version=version,
        kind="eval",
    )
