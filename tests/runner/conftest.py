"""Shared fixtures for the runner tests: a tiny config, a private token cache, a clean subprocess env."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
OPENLAB = [sys.executable, "-m", "runner.cli"]

TINY: dict[str, Any] = {
    "name": "t",
    "model": {
        "hidden_dim": 32,
        "intermediate_dim": 64,
        "num_layers": 2,
        "num_heads": 4,
        "num_kv_heads": 2,
        "seq_len": 32,
        "vocab_size": 264,
        "compute_dtype": "float32",
    },
    "train": {"batch_size": 8, "steps": 20, "seed": 0, "log_every": 1},
    "optimizer": {"learning_rate": 3e-3},
    "schedule": {"warmup_steps": 2},
    "eval": {"sets": [{"name": "val", "max_tokens": 2048}]},
}


def tiny(**overrides: Any) -> dict[str, Any]:
    """TINY with dotted overrides, e.g. tiny(**{"train.steps": 5})."""
    cfg = copy.deepcopy(TINY)
    for dotted, value in overrides.items():
        node = cfg
        *path, last = dotted.split(".")
        for p in path:
            node = node.setdefault(p, {})
        node[last] = value
    return cfg


def write_config(path: Path, cfg: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(cfg))
    return path


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("token-cache")


@pytest.fixture(autouse=True)
def _private_cache(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENLAB_CACHE_DIR", str(cache_dir))


def sub_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"JAX_PLATFORMS": "cpu", "WANDB_MODE": "disabled", "PYTHONPATH": str(REPO)})
    env.pop("XLA_FLAGS", None)
    env.update(extra)
    return env


def openlab(*args: str, timeout: float = 240, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*OPENLAB, *args], capture_output=True, text=True, timeout=timeout, cwd=REPO, env=sub_env(**env)
    )
