"""Gradient accumulation equals one big batch; the tracker's metrics file, resume truncation and progress bar."""

from __future__ import annotations

import json
from pathlib import Path

import jax
import numpy as np
import pytest

from runner.config import parse_config
from runner.optim import make_optimizer
from runner.parallel import make_mesh, maybe_initialize_distributed
from runner.tracking import Tracker
from runner.trainstep import abstract_state, build_train_step, init_state, put_train_batch
from tests.runner.conftest import tiny


def test_grad_accumulation_matches_one_batch() -> None:
    mesh = make_mesh()
    batch = np.random.default_rng(0).integers(0, 257, (8, 33)).astype(np.int32)
    params = {}
    for accum in (1, 4):
        cfg = parse_config(tiny(**{"train.grad_accum": accum, "model.num_layers": 1}))
        tx, lr = make_optimizer(cfg.optimizer, cfg.schedule, cfg.train.steps)
        _, shardings = abstract_state(cfg, tx, mesh)
        state = init_state(cfg, tx, shardings)
        step = build_train_step(cfg, tx, lr, shardings, mesh)
        state, metrics = step(state, put_train_batch(batch, cfg, mesh))
        params[accum] = (jax.device_get(state["params"]), float(metrics["loss"]))
    assert params[1][1] == pytest.approx(params[4][1], rel=1e-6)
    for a, b in zip(jax.tree_util.tree_leaves(params[1][0]), jax.tree_util.tree_leaves(params[4][0]), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


def test_tracker_metrics_resume_and_progress(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = parse_config(tiny(**{"train.steps": 10}))
    t = Tracker(tmp_path, cfg, "rid", start_step=0, progress=True)
    for s in range(1, 11):
        t.log(s, {"train/loss": 1.0 / s, "throughput/mfu": None})
        t.progress(s, 1.0 / s, 1234.0)
    t.log(10, {"eval/val/bpb": 2.0})
    t.close()
    assert "tok/s=1,234" in capsys.readouterr().err and t.info().wandb_mode == "disabled"
    lines = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert len(lines) == 11 and "throughput/mfu" not in lines[0] and lines[0]["train/loss"] == 1.0
    # A run resumed from step 6 drops what the killed attempt logged after its checkpoint.
    with (tmp_path / "metrics.jsonl").open("a") as f:
        f.write('{"step": 11, "train/lo')  # a line torn by SIGKILL
    Tracker(tmp_path, cfg, "rid", start_step=6, progress=False).close()
    assert [json.loads(x)["step"] for x in (tmp_path / "metrics.jsonl").read_text().splitlines()] == [1, 2, 3, 4, 5, 6]
    # Resuming a finished run keeps every train line but not the final eval, which it logs again.
    t = Tracker(tmp_path, cfg, "rid", start_step=6, progress=False)
    for s in range(7, 11):
        t.log(s, {"train/loss": 0.1})
    t.log(10, {"eval/val/bpb": 2.0})
    t.close()
    Tracker(tmp_path, cfg, "rid", start_step=10, progress=False).close()
    kept = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [x["step"] for x in kept] == list(range(1, 11)) and not any("eval/val/bpb" in x for x in kept)


def test_single_host_does_not_initialize_distributed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JAX_COORDINATOR_ADDRESS", raising=False)
    monkeypatch.delenv("OPENLAB_DISTRIBUTED", raising=False)
    assert maybe_initialize_distributed() is False


def test_wandb_online_without_credentials_falls_back_to_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WANDB_MODE", "online")
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    monkeypatch.setenv("WANDB_CONFIG_DIR", str(tmp_path / "cfg"))
    t = Tracker(tmp_path, parse_config(tiny()), "rid-fallback", start_step=0, progress=False)
    t.log(1, {"train/loss": 1.0})
    t.close()
    assert t.mode == "offline" and t.info().wandb_run_id == "rid-fallback"
    assert list((tmp_path / "wandb").glob("offline-run-*-rid-fallback"))
