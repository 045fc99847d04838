"""Speedrun files the reproduction tests commit: the tiny config through `default_speedrun` / `speedrun_suite`
on the `cpu` track (real training in Ray jobs, a few steps)."""

from __future__ import annotations

TINY = '''"""Tiny speedrun for the reproduction test."""

from runner.config import parse_config
from runner.speedrun import default_speedrun

CONFIG = parse_config({{
    "name": "{name}", "track": "cpu", "description": "reproduction test",
    "model": {{"hidden_dim": 32, "intermediate_dim": 64, "num_layers": 1, "num_heads": 2, "num_kv_heads": 1,
              "seq_len": 32, "vocab_size": 264, "compute_dtype": "float32"}},
    "train": {{"batch_size": 4, "steps": 10, "log_every": 5}},
    "optimizer": {{"learning_rate": {lr}}},
    "schedule": {{"warmup_steps": 1}},
    "tracking": {{"mode": "disabled"}},
}})
STEPS = default_speedrun("{name}", CONFIG)
'''

SUITE = '''"""A 3-budget scaling suite of the tiny config (more steps = more FLOPs)."""

from runner.config import parse_config
from runner.speedrun import speedrun_suite


def member(steps: int):
    return parse_config({
        "name": f"s{steps}", "track": "cpu",
        "model": {"hidden_dim": 32, "intermediate_dim": 64, "num_layers": 1, "num_heads": 2, "num_kv_heads": 1,
                  "seq_len": 32, "vocab_size": 264, "compute_dtype": "float32"},
        "train": {"batch_size": 4, "steps": steps, "log_every": 5},
        "optimizer": {"learning_rate": 0.01}, "schedule": {"warmup_steps": 1},
        "tracking": {"mode": "disabled"},
    })


STEPS = speedrun_suite("tinysuite", [member(4), member(12), member(36)])
'''
