"""Experiment 0 (the example `openlab init` wrote): does a warmer learning rate help a tiny model?

Rename it exp<N>_<slug>.py where N is your Experiment issue's number. Two trainings of the same byte-level
model on the builtin corpus, differing only in the learning rate, each scored on the held-out split. Plans in
a second, runs in a few minutes on a laptop:

    openlab plan experiments/exp0_example.py
    openlab run  experiments/exp0_example.py
"""

from __future__ import annotations

from runner.config import RunConfig
from runner.steps import eval_bpb, train

BASE = {
    "name": "exp0_example",
    "track": "cpu",
    "model": {
        "hidden_dim": 64, "intermediate_dim": 192, "num_layers": 2, "num_heads": 4, "num_kv_heads": 2,
        "seq_len": 128, "vocab_size": 264, "tie_embeddings": True, "compute_dtype": "float32",
    },
    "train": {"batch_size": 8, "steps": 100, "seed": 0, "log_every": 10},
    "optimizer": {"name": "adamw", "weight_decay": 0.1},
    "schedule": {"name": "cosine", "warmup_steps": 10},
}


def run_config(learning_rate: float) -> RunConfig:
    cfg = {**BASE, "optimizer": {**BASE["optimizer"], "learning_rate": learning_rate}}
    return RunConfig.model_validate(cfg)


STEPS = []
for lr in (1e-3, 3e-3):
    trained = train(f"exp0/train_lr{lr:g}", run_config(lr))
    STEPS += [trained, eval_bpb(f"exp0/eval_lr{lr:g}", trained, run_config(lr).eval.sets)]

if __name__ == "__main__":
    from runner.executor_cli import main

    main()
